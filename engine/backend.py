"""Attention backends: where KV is written and read through the block tables.

'torch' runs the plain-torch references of kernels/reference.py (any device).
'native' is 'torch' with decode and extend attention in C (kernels/cpu_native.py, kernels/cpu_extend.py:
the pool read in place, not gathered; CPU, float32; compiled on first use, so it needs a C compiler),
and a layer's small operations too (RoPE, the KV stores, residual adds and RMSNorm: kernels/cpu_layer.py,
run by engine/fused.py's forward).
'triton' runs the Triton kernels of kernels/ (CUDA; on CPU only under TRITON_INTERPRET=1). Triton is
optional (requirements-gpu.txt; PyPI has it for Linux only): nothing imports it unless this backend
is asked for, and 'auto' picks it only where it is installed.
All implement the same three calls, so the model never knows which one is live.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch

from kernels import cpu_extend, cpu_layer, cpu_native, reference


@dataclass(frozen=True)
class AttentionBackend:
    name: str
    store_kv: Callable[..., None]
    extend_attention: Callable[..., torch.Tensor]
    decode_attention: Callable[..., torch.Tensor]
    # plan_decode(block_tables, seq_lens, block_size): what decode_attention would otherwise work out
    # in every layer, made once per forward and passed to it as `plan` (None: the backend has none)
    plan_decode: Callable[..., object] | None = None
    # whether the model runs a layer's small operations in C (engine/fused.py: native's, on the CPU)
    fused: bool = False


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was asked for, but torch sees no CUDA device here")
    return torch.device(device)


def triton_installed() -> bool:
    """Whether Triton can be imported here (without importing it: that takes seconds)."""
    try:
        return importlib.util.find_spec("triton") is not None
    # (a broken install; or one hidden, as tests/deploy/test_requirements.py does)
    except (ImportError, ValueError):
        return False


def select_backend(name: str, device: torch.device) -> AttentionBackend:
    """'auto' picks triton on CUDA (where Triton is installed), native on a CPU where the C kernel
    builds, else torch."""
    if name == "auto":
        if device.type == "cuda" and triton_installed():
            name = "triton"
        else:
            name = "native" if device.type == "cpu" and cpu_native.available() else "torch"
    if name == "native":
        if device.type != "cpu" or not cpu_native.available():
            why = "it runs on the CPU only" if device.type != "cpu" else cpu_native.unavailable_reason()
            raise ValueError(f"backend='native' is not available here: {why}")
        return AttentionBackend(
            "native",
            reference.store_kv_ref,
            cpu_extend.paged_extend_attention,
            cpu_native.paged_decode_attention,
            cpu_native.plan_decode,
            fused=cpu_layer.available(),
        )
    if name == "torch":
        return AttentionBackend(
            "torch",
            reference.store_kv_ref,
            reference.paged_extend_attention_ref,
            reference.paged_decode_attention_ref,
            reference.plan_decode,
        )
    if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("backend='triton' needs a CUDA device, or TRITON_INTERPRET=1 to interpret the "
                         "kernels on CPU")
    if not triton_installed():
        raise ValueError("backend='triton' needs Triton: pip install -r requirements-gpu.txt (Linux only)")
    import kernels as triton_kernels  # imported only when asked for: it pulls in triton

    return AttentionBackend(
        "triton",
        triton_kernels.store_kv,
        triton_kernels.paged_extend_attention,
        triton_kernels.paged_decode_attention,
    )
