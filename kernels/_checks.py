"""Argument checks, and the few constants and helpers, shared by the kernel wrappers.

Every check raises ValueError naming the argument, the expected value and the one received.
Index *values* (slots, block ids, sequence lengths) are checked only for CPU tensors, where it is
free; on CUDA it would cost a host sync per call, so there they are the caller's contract.
"""

from __future__ import annotations

import torch
import triton

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INDEX_DTYPES = (torch.int32, torch.int64)
# log2(e): the attention kernels scale scores by scale * LOG2E and use exp2, which is cheaper than exp.
LOG2E = 1.4426950408889634


def check_ndim(name: str, t: torch.Tensor, ndim: int, layout: str) -> None:
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D {layout}, got shape {tuple(t.shape)}")


def check_dtype(name: str, t: torch.Tensor, allowed: tuple[torch.dtype, ...]) -> None:
    if t.dtype not in allowed:
        names = ", ".join(str(d).removeprefix("torch.") for d in allowed)
        raise ValueError(f"{name} must have dtype in ({names}), got {t.dtype}")


def check_shape(name: str, t: torch.Tensor, expected: tuple[int, ...], layout: str) -> None:
    if tuple(t.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)} {layout}, got {tuple(t.shape)}")


def check_same_device(**tensors: torch.Tensor) -> torch.device:
    devices = {name: t.device for name, t in tensors.items()}
    first = next(iter(devices.values()))
    if any(d != first for d in devices.values()):
        listing = ", ".join(f"{name}={d}" for name, d in devices.items())
        raise ValueError(f"all tensors must be on one device, got {listing}")
    return first


def check_cache_pair(k_cache: torch.Tensor, v_cache: torch.Tensor) -> None:
    """k_cache and v_cache: (num_blocks, block_size, num_kv_heads, head_dim), same shape and dtype."""
    layout = "(num_blocks, block_size, num_kv_heads, head_dim)"
    check_ndim("k_cache", k_cache, 4, layout)
    check_ndim("v_cache", v_cache, 4, layout)
    if k_cache.shape != v_cache.shape:
        raise ValueError(f"k_cache and v_cache must have the same shape, got {tuple(k_cache.shape)} and "
                         f"{tuple(v_cache.shape)}")
    check_dtype("k_cache", k_cache, FLOAT_DTYPES)
    if v_cache.dtype != k_cache.dtype:
        raise ValueError(f"k_cache and v_cache must have the same dtype, got {k_cache.dtype} and "
                         f"{v_cache.dtype}")
    if min(k_cache.shape) < 1:
        raise ValueError(f"k_cache must have no empty dimension, got shape {tuple(k_cache.shape)}")


def check_attention_args(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    query_start: torch.Tensor | None = None,
) -> None:
    """The shapes and dtypes both paged attention wrappers take.

    q: (rows, num_heads, head_dim) in the caches' dtype and head_dim, num_heads a multiple of
    num_kv_heads; block_tables: (num_seqs, max_pages); seq_lens: (num_seqs,); index dtypes.
    Decode (query_start None) has one query row per sequence, so rows == num_seqs. Extend packs
    its new tokens: rows == total_new, and query_start is (num_seqs + 1,).
    """
    check_cache_pair(k_cache, v_cache)
    num_kv_heads, head_dim = k_cache.shape[2:]
    rows = "num_seqs" if query_start is None else "total_new"
    check_ndim("q", q, 3, f"({rows}, num_heads, head_dim)")
    num_rows, num_heads = q.shape[:2]
    check_shape("q", q, (num_rows, num_heads, head_dim), f"({rows}, num_heads, head_dim of the cache)")
    if num_heads % num_kv_heads != 0:
        raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})")
    if q.dtype != k_cache.dtype:
        raise ValueError(f"q and the caches must have the same dtype, got q {q.dtype} and caches "
                         f"{k_cache.dtype}")
    check_ndim("block_tables", block_tables, 2, "(num_seqs, max_pages)")
    num_seqs = block_tables.shape[0]
    if query_start is None and num_seqs != num_rows:
        raise ValueError(f"block_tables must have one row per sequence ({num_rows}), got shape "
                         f"{tuple(block_tables.shape)}")
    check_dtype("block_tables", block_tables, INDEX_DTYPES)
    if query_start is not None:
        check_shape("query_start", query_start, (num_seqs + 1,), "(num_seqs + 1,)")
        check_dtype("query_start", query_start, INDEX_DTYPES)
    check_shape("seq_lens", seq_lens, (num_seqs,), "(num_seqs,)")
    check_dtype("seq_lens", seq_lens, INDEX_DTYPES)


def check_launchable(device: torch.device, kernel: object) -> None:
    """Triton runs CPU tensors only under the interpreter, chosen when the kernel module is imported."""
    from triton.runtime.interpreter import InterpretedFunction

    if device.type == "cpu" and not isinstance(kernel, InterpretedFunction):
        raise ValueError(
            "CPU tensors need the Triton interpreter: set TRITON_INTERPRET=1 before the first import of "
            "the kernels package's kernel modules (or use the torch references in kernels.reference)"
        )


def check_values_in_range(name: str, values: torch.Tensor, low: int, high: int) -> None:
    """On CPU only: every entry of values must lie in [low, high)."""
    if values.device.type != "cpu" or values.numel() == 0:
        return
    bad = (values < low) | (values >= high)
    if bool(bad.any()):
        first = values[bad][0].item()
        raise ValueError(f"{name} has value {first} outside [{low}, {high})")


def check_block_tables_cover(block_tables: torch.Tensor, seq_lens: torch.Tensor, block_size: int,
                             num_blocks: int) -> None:
    """On CPU only: each sequence's used pages exist in block_tables and name real blocks."""
    if seq_lens.device.type != "cpu" or seq_lens.numel() == 0:
        return
    check_values_in_range("seq_lens", seq_lens, 0, block_tables.shape[1] * block_size + 1)
    num_pages = (seq_lens.long() + block_size - 1) // block_size  # (num_seqs,)
    used = torch.arange(block_tables.shape[1])[None, :] < num_pages[:, None]  # (num_seqs, max_pages)
    check_values_in_range("block_tables (pages in use)", block_tables[used], 0, num_blocks)


def next_power_of_2(n: int) -> int:
    return int(triton.next_power_of_2(max(int(n), 1)))
