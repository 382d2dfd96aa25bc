"""Paged KV-cache kernels: Triton implementations and their plain-torch references.

    from kernels import store_kv, paged_decode_attention, paged_extend_attention   # Triton
    from kernels.reference import store_kv_ref, ...                                # torch
    from kernels import cpu_native, cpu_extend                                     # C, for the CPU

The Triton wrappers are imported on first use (a module ``__getattr__``), so ``import kernels``
and ``import kernels.reference`` never import triton. Each wrapper lives in its own submodule
(store_kv_kernel, decode_attention, extend_attention). On CPU the wrappers need
``TRITON_INTERPRET=1`` set before their first import. ``cpu_native`` and ``cpu_extend`` (decode and
extend attention in C, compiled on first use by ``cpu_build``) never import triton either.
"""

from __future__ import annotations

import importlib
from typing import Any

# wrapper name -> submodule that defines it
_WRAPPERS = {
    "store_kv": "store_kv_kernel",
    "paged_decode_attention": "decode_attention",
    "paged_extend_attention": "extend_attention",
}

__all__ = list(_WRAPPERS)


def __getattr__(name: str) -> Any:
    # Not cached in the package: a test that reloads a kernel module (to re-decorate it for
    # another TRITON_INTERPRET) gets the reloaded wrapper here.
    if name not in _WRAPPERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WRAPPERS[name]}"), name)
