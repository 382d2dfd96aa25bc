"""Paged KV-cache kernels: Triton implementations and their plain-torch references.

    from kernels import store_kv, paged_decode_attention, paged_extend_attention   # Triton
    from kernels.reference import store_kv_ref, ...                                # torch

The Triton wrappers are imported on first use, so ``import kernels.reference`` never imports
triton. The package attribute ``kernels.store_kv`` is always the wrapper function, never the
submodule of the same name (import ``kernels.store_kv``'s other names with ``from kernels.store_kv
import ...``). On CPU the wrappers need ``TRITON_INTERPRET=1`` set before their first import.
"""

from __future__ import annotations

import importlib
import sys
import types

# wrapper name -> submodule that defines it
_WRAPPERS = {
    "store_kv": "store_kv",
    "paged_decode_attention": "decode_attention",
    "paged_extend_attention": "extend_attention",
}

__all__ = list(_WRAPPERS)


class _Package(types.ModuleType):
    def __getattr__(self, name: str):
        if name not in _WRAPPERS:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{self.__name__}.{_WRAPPERS[name]}"), name)

    def __setattr__(self, name: str, value) -> None:
        # Importing kernels/store_kv.py binds the submodule as kernels.store_kv; keep the wrapper there.
        if name in _WRAPPERS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
