"""Write new tokens' keys and values into their paged-cache slots (Triton; reference: store_kv_ref)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import _checks

# Tokens per program. Each program copies a (BLOCK_T, num_kv_heads * head_dim) tile of K and of V.
_BLOCK_T = 16


# A Triton kernel: its parameters are typed by Triton when it compiles them (pointers, ints,
# tl.constexpr), not by Python annotations, so mypy --strict is told to leave its signature.
@triton.jit  # type: ignore[untyped-decorator]
def store_kv_kernel(  # type: ignore[no-untyped-def]
    k_ptr, v_ptr, k_cache_ptr, v_cache_ptr, slot_mapping_ptr,
    num_tokens,
    stride_k_tok, stride_k_head, stride_k_dim,
    stride_v_tok, stride_v_head, stride_v_dim,
    stride_kc_block, stride_kc_slot, stride_kc_head, stride_kc_dim,
    stride_vc_block, stride_vc_slot, stride_vc_head, stride_vc_dim,
    stride_slot,
    NUM_KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
    BLOCK_T: tl.constexpr, BLOCK_HD: tl.constexpr,
):
    # Program p copies tokens [p * BLOCK_T, (p + 1) * BLOCK_T); the second axis runs over
    # (head, dim) pairs flattened, so num_kv_heads and head_dim need not be powers of two.
    offs_t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_hd = tl.arange(0, BLOCK_HD)
    offs_head = offs_hd // HEAD_DIM
    offs_dim = offs_hd % HEAD_DIM
    mask_t = offs_t < num_tokens
    mask = mask_t[:, None] & (offs_hd < NUM_KV_HEADS * HEAD_DIM)[None, :]  # (BLOCK_T, BLOCK_HD)

    slot = tl.load(slot_mapping_ptr + offs_t * stride_slot, mask=mask_t, other=0).to(tl.int64)
    block = slot // BLOCK_SIZE
    offs_in_block = slot % BLOCK_SIZE

    k = tl.load(k_ptr + offs_t[:, None] * stride_k_tok + offs_head[None, :] * stride_k_head
                + offs_dim[None, :] * stride_k_dim, mask=mask)
    v = tl.load(v_ptr + offs_t[:, None] * stride_v_tok + offs_head[None, :] * stride_v_head
                + offs_dim[None, :] * stride_v_dim, mask=mask)
    kc_ptrs = (k_cache_ptr + block[:, None] * stride_kc_block + offs_in_block[:, None] * stride_kc_slot
               + offs_head[None, :] * stride_kc_head + offs_dim[None, :] * stride_kc_dim)
    vc_ptrs = (v_cache_ptr + block[:, None] * stride_vc_block + offs_in_block[:, None] * stride_vc_slot
               + offs_head[None, :] * stride_vc_head + offs_dim[None, :] * stride_vc_dim)
    tl.store(kc_ptrs, k.to(k_cache_ptr.dtype.element_ty), mask=mask)
    tl.store(vc_ptrs, v.to(v_cache_ptr.dtype.element_ty), mask=mask)


def store_kv(
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Write N tokens' keys and values into their slots, in place; see ``store_kv_ref``.

    k_cache, v_cache: (num_blocks, block_size, num_kv_heads, head_dim), any strides.
    k, v: (N, num_kv_heads, head_dim), any float dtype (cast to the cache's), any strides.
    slot_mapping: (N,) int32 or int64, slot = block * block_size + offset. Slots must be distinct
    and in [0, num_blocks * block_size) (checked on CPU); no other slot is written.
    """
    _checks.check_cache_pair(k_cache, v_cache)
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    layout = "(N, num_kv_heads, head_dim)"
    _checks.check_ndim("k", k, 3, layout)
    _checks.check_ndim("slot_mapping", slot_mapping, 1, "(N,)")
    num_tokens = slot_mapping.shape[0]
    _checks.check_shape("k", k, (num_tokens, num_kv_heads, head_dim), layout)
    _checks.check_shape("v", v, (num_tokens, num_kv_heads, head_dim), layout)
    _checks.check_dtype("k", k, _checks.FLOAT_DTYPES)
    _checks.check_dtype("v", v, _checks.FLOAT_DTYPES)
    _checks.check_dtype("slot_mapping", slot_mapping, _checks.INDEX_DTYPES)
    device = _checks.check_same_device(k_cache=k_cache, v_cache=v_cache, k=k, v=v, slot_mapping=slot_mapping)
    _checks.check_launchable(device, store_kv_kernel)
    _checks.check_values_in_range("slot_mapping", slot_mapping, 0, num_blocks * block_size)
    if num_tokens == 0:
        return

    grid = (triton.cdiv(num_tokens, _BLOCK_T),)
    store_kv_kernel[grid](
        k, v, k_cache, v_cache, slot_mapping,
        num_tokens,
        *k.stride(), *v.stride(), *k_cache.stride(), *v_cache.stride(), slot_mapping.stride(0),
        NUM_KV_HEADS=num_kv_heads, HEAD_DIM=head_dim, BLOCK_SIZE=block_size,
        BLOCK_T=_BLOCK_T, BLOCK_HD=_checks.next_power_of_2(num_kv_heads * head_dim),
    )
