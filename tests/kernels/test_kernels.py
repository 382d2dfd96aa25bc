"""Triton paged-KV kernels against their torch references (kernels/reference.py).

On a machine without CUDA the kernels run under the Triton interpreter: TRITON_INTERPRET=1 is set
here, before triton or the kernel modules are imported. Tolerances (absolute and relative, on the
output) are per dtype, in TOLERANCES.
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")

# A kernel module imported earlier in this process (e.g. through an engine test) was decorated for
# whatever TRITON_INTERPRET was then; reloading re-decorates it for the setting above.
for _name in ("kernels.store_kv_kernel", "kernels.decode_attention", "kernels.extend_attention"):
    if _name in sys.modules:
        importlib.reload(sys.modules[_name])

from paged_kv_support import DEVICE, HEAD_DIM, make_paged_kv  # noqa: E402

from kernels import decode_attention as decode_module  # noqa: E402
from kernels import paged_decode_attention, paged_extend_attention, store_kv  # noqa: E402
from kernels.reference import (  # noqa: E402
    paged_decode_attention_ref,
    paged_extend_attention_ref,
    slot_mapping_ref,
    store_kv_ref,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# (atol, rtol) of the kernel's output against the reference's, both in the input dtype.
TOLERANCES = {
    torch.float32: (2e-5, 2e-5),
    torch.float16: (4e-3, 4e-3),
    torch.bfloat16: (2e-2, 2e-2),
}


def _param_id(value):
    """Readable test ids: 'float16' rather than 'dtype3'."""
    return str(value).removeprefix("torch.") if isinstance(value, torch.dtype) else None


def assert_close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.dtype == expected.dtype
    atol, rtol = TOLERANCES[expected.dtype]
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


# ---------------------------------------------------------------------------------------------
# store_kv


@pytest.mark.parametrize("block_size", [1, 4, 16])
@pytest.mark.parametrize(
    ("cache_dtype", "kv_dtype"), [(torch.float32, torch.float32), (torch.float16, torch.float32)],
    ids=_param_id
)
def test_store_kv_writes_exactly_the_given_slots(block_size, cache_dtype, kv_dtype):
    gen = torch.Generator().manual_seed(0)
    num_blocks, num_kv_heads, num_tokens = 9, 3, 21  # 3 heads: not a power of two
    shape = (num_blocks, block_size, num_kv_heads, HEAD_DIM)
    k_cache = torch.randn(shape, generator=gen).to(cache_dtype)
    v_cache = torch.randn(shape, generator=gen).to(cache_dtype)
    num_tokens = min(num_tokens, num_blocks * block_size)
    slots = torch.randperm(num_blocks * block_size, generator=gen)[:num_tokens]
    k = torch.randn(num_tokens, num_kv_heads, HEAD_DIM, generator=gen, dtype=kv_dtype)
    v = torch.randn(num_tokens, num_kv_heads, HEAD_DIM, generator=gen, dtype=kv_dtype)
    expected_k, expected_v = k_cache.clone(), v_cache.clone()
    store_kv_ref(expected_k, expected_v, k, v, slots)

    k_cache, v_cache = k_cache.to(DEVICE), v_cache.to(DEVICE)
    store_kv(k_cache, v_cache, k.to(DEVICE), v.to(DEVICE), slots.to(DEVICE, torch.int32))

    assert torch.equal(k_cache.cpu(), expected_k)
    assert torch.equal(v_cache.cpu(), expected_v)


def test_store_kv_handles_strided_inputs_and_fused_cache():
    """K and V sliced out of one fused qkv projection, caches as kv[:, 0] and kv[:, 1]."""
    gen = torch.Generator().manual_seed(1)
    num_blocks, block_size, num_kv_heads, num_tokens = 6, 4, 2, 10
    kv = torch.zeros(num_blocks, 2, block_size, num_kv_heads, HEAD_DIM, device=DEVICE)
    qkv = torch.randn(num_tokens, 3 * num_kv_heads, HEAD_DIM, generator=gen).to(DEVICE)
    k, v = qkv[:, num_kv_heads:2 * num_kv_heads], qkv[:, 2 * num_kv_heads:]
    slots = torch.randperm(num_blocks * block_size, generator=gen)[:num_tokens].to(DEVICE)  # int64
    expected = kv.clone()
    store_kv_ref(expected[:, 0], expected[:, 1], k, v, slots)

    store_kv(kv[:, 0], kv[:, 1], k, v, slots)

    assert torch.equal(kv, expected)
    assert torch.count_nonzero(kv) == 2 * num_tokens * num_kv_heads * HEAD_DIM


# ---------------------------------------------------------------------------------------------
# paged decode attention

MIXED_LENS = [1, 15, 17, 33]
LONG_LENS = [300, 1, 17]  # one sequence above 256 tokens next to short ones


@pytest.mark.parametrize(
    ("block_size", "group", "num_splits", "seq_lens", "dtype"),
    [
        (1, 1, 1, MIXED_LENS, torch.float32),
        (4, 2, 1, MIXED_LENS, torch.float32),
        (16, 4, 1, MIXED_LENS, torch.float32),
        (16, 1, 4, LONG_LENS, torch.float32),
        (4, 4, 3, MIXED_LENS + [300], torch.float32),
        (1, 2, 5, LONG_LENS, torch.float16),
        (16, 2, 1, MIXED_LENS, torch.float16),
        (32, 4, 4, LONG_LENS, torch.float16),
        (4, 1, None, LONG_LENS, torch.float32),
    ],    ids=_param_id,
)
def test_decode_matches_reference(block_size, group, num_splits, seq_lens, dtype):
    gen = torch.Generator().manual_seed(2)
    num_kv_heads = 2
    kv = make_paged_kv(seq_lens, block_size, num_kv_heads, dtype, gen)
    q = torch.randn(len(seq_lens), num_kv_heads * group, HEAD_DIM, generator=gen).to(DEVICE, dtype)
    scale = HEAD_DIM**-0.5

    out = paged_decode_attention(q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, scale,
                                 num_splits=num_splits)

    assert_close(out,
                 paged_decode_attention_ref(q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, scale))


@pytest.mark.parametrize("num_splits", [1, 3])
def test_decode_block_reads_match_reference(num_splits):
    gen = torch.Generator().manual_seed(3)
    kv = make_paged_kv(MIXED_LENS + [300], 4, 2, torch.float32, gen)
    q = torch.randn(5, 4, HEAD_DIM, generator=gen).to(DEVICE)
    num_blocks = kv.k_cache.shape[0]
    # increments add on
    start = torch.randint(0, 5, (num_blocks,), generator=gen, dtype=torch.int32).to(DEVICE)
    reads, expected = start.clone(), start.clone()

    paged_decode_attention(q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 1.0, reads,
                           num_splits=num_splits)
    paged_decode_attention_ref(q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 1.0, expected)

    assert torch.equal(reads, expected)
    assert bool((reads > start).any())


def test_decode_result_does_not_depend_on_split_count():
    gen = torch.Generator().manual_seed(4)
    kv = make_paged_kv(LONG_LENS, 16, 1, torch.float32, gen)
    q = torch.randn(3, 2, HEAD_DIM, generator=gen).to(DEVICE)
    args = (q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 0.3)

    # 7: the short sequences' splits are mostly empty
    outs = [paged_decode_attention(*args, num_splits=n) for n in (1, 2, 7)]

    for out in outs[1:]:
        torch.testing.assert_close(out, outs[0], atol=1e-6, rtol=1e-6)


def test_decode_accepts_int64_indices_strided_q_and_fused_cache():
    gen = torch.Generator().manual_seed(5)
    kv = make_paged_kv(MIXED_LENS, 4, 2, torch.float32, gen, fused_kv=True)
    qkv = torch.randn(4, 8, HEAD_DIM, generator=gen).to(DEVICE)
    q = qkv[:, :4]  # (num_seqs, num_heads, head_dim), not contiguous
    block_tables, seq_lens = kv.block_tables.long(), kv.seq_lens.long()

    out = paged_decode_attention(q, kv.k_cache, kv.v_cache, block_tables, seq_lens, 0.25, num_splits=2)

    assert_close(out,
                 paged_decode_attention_ref(q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 0.25))


def test_auto_num_splits_is_one_for_short_sequences_or_full_grids(monkeypatch):
    cuda = torch.device("cuda")
    monkeypatch.setattr(decode_module, "_num_sms", lambda device: 132)
    choose = decode_module.choose_num_splits

    assert choose(1, 8, 32768, torch.device("cpu")) == 1
    assert choose(1, 8, 256, cuda) == 1
    assert choose(64, 8, 32768, cuda) == 1  # 512 programs already fill 132 SMs twice
    assert choose(1, 8, 32768, cuda) == 33  # ceil(2 * 132 / 8)
    assert choose(1, 1, 1024, cuda) == 4  # at least 256 tokens a split


# ---------------------------------------------------------------------------------------------
# paged extend attention

# (cached prefix, new tokens) per sequence: pure prefills, chunked prefills crossing block and tile
# boundaries, one decode-like row, one sequence with no new tokens, and one above 256 tokens.
EXTEND_BATCH = [(0, 17), (15, 1), (16, 17), (1, 0), (0, 1), (267, 33)]


@pytest.mark.parametrize(
    ("block_size", "group", "dtype"),
    [
        (1, 1, torch.float32),
        (4, 2, torch.float32),
        (16, 4, torch.float32),
        (4, 4, torch.float16),
        (8, 1, torch.float16),
    ],    ids=_param_id,
)
def test_extend_matches_reference(block_size, group, dtype):
    gen = torch.Generator().manual_seed(6)
    num_kv_heads = 2
    kv = make_paged_kv([p + n for p, n in EXTEND_BATCH], block_size, num_kv_heads, dtype, gen)
    num_new = torch.tensor([n for _, n in EXTEND_BATCH])
    query_start = torch.cat([torch.zeros(1, dtype=torch.int64), num_new.cumsum(0)]).to(DEVICE, torch.int32)
    q = torch.randn(int(num_new.sum()), num_kv_heads * group, HEAD_DIM, generator=gen).to(DEVICE, dtype)
    scale = HEAD_DIM**-0.5

    out = paged_extend_attention(q, kv.k_cache, kv.v_cache, kv.block_tables, query_start, kv.seq_lens, scale)

    expected = paged_extend_attention_ref(q, kv.k_cache, kv.v_cache, kv.block_tables, query_start,
                                          kv.seq_lens, scale)
    assert_close(out, expected)


def test_extend_accepts_int64_indices_and_strided_q():
    gen = torch.Generator().manual_seed(7)
    batch = [(3, 5), (0, 9)]
    kv = make_paged_kv([p + n for p, n in batch], 4, 1, torch.float32, gen, fused_kv=True)
    query_start = torch.tensor([0, 5, 14], device=DEVICE)  # int64
    q = torch.randn(14, 4, HEAD_DIM, generator=gen).to(DEVICE)[:, 1:3]  # 2 heads, strided
    args = (q, kv.k_cache, kv.v_cache, kv.block_tables.long(), query_start, kv.seq_lens.long(), 0.5)

    out = paged_extend_attention(*args)

    assert_close(out, paged_extend_attention_ref(*args))


def test_prefill_then_decode_matches_reference_pipeline():
    """The engine's per-layer order: store_kv + extend for a chunked prefill, store_kv + decode."""
    gen = torch.Generator().manual_seed(8)
    block_size, num_kv_heads, num_heads = 4, 2, 4
    prompt_lens, chunk = [19, 6], 8  # first prompt cached up to 11, then a chunk of 8
    num_blocks = 16
    block_tables = torch.randperm(num_blocks, generator=gen)[:12].view(2, 6).to(torch.int32)
    shape = (num_blocks, block_size, num_kv_heads, HEAD_DIM)
    caches = {name: [torch.zeros(shape, device=DEVICE) for _ in range(2)] for name in ("triton", "torch")}
    ops = {
        "triton": (store_kv, paged_extend_attention, paged_decode_attention),
        "torch": (store_kv_ref, paged_extend_attention_ref, paged_decode_attention_ref),
    }

    def run(name, seq_ids, positions, q, k, v, seq_lens, query_start=None):
        store, extend, decode = ops[name]
        k_cache, v_cache = caches[name]
        slots = slot_mapping_ref(block_tables, seq_ids, positions, block_size).to(DEVICE)
        store(k_cache, v_cache, k, v, slots)
        bt, lens = block_tables.to(DEVICE), torch.tensor(seq_lens, dtype=torch.int32, device=DEVICE)
        if query_start is None:
            return decode(q, k_cache, v_cache, bt, lens, 0.25)
        return extend(q, k_cache, v_cache, bt, torch.tensor(query_start, device=DEVICE), lens, 0.25)

    def step(seq_ids, positions, seq_lens, query_start=None):
        n = len(positions)
        q, k, v = (torch.randn(n, h, HEAD_DIM, generator=gen).to(DEVICE)
                   for h in (num_heads, num_kv_heads, num_kv_heads))
        ids, pos = torch.tensor(seq_ids), torch.tensor(positions)
        outs = [run(name, ids, pos, q, k, v, seq_lens, query_start) for name in ("triton", "torch")]
        assert_close(*outs)

    first = prompt_lens[0] - chunk
    step([0] * first + [1] * 6, list(range(first)) + list(range(6)), [first, 6], [0, first, first + 6])
    step([0] * chunk, list(range(first, prompt_lens[0])), [prompt_lens[0], 6], [0, chunk, chunk])
    step([0, 1], [19, 6], [20, 7])
    for mine, expected in zip(caches["triton"], caches["torch"], strict=True):
        assert torch.equal(mine, expected)


def test_non_power_of_two_block_size_head_dim_and_group_match_reference():
    """Tiles are padded and masked, so block_size 3, head_dim 12 and 3 query heads per KV head work."""
    gen = torch.Generator().manual_seed(11)
    kv = make_paged_kv([7, 25], 3, 1, torch.float32, gen, head_dim=12)
    q = torch.randn(2, 3, 12, generator=gen).to(DEVICE)
    decode_args = (q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 0.3)
    assert_close(paged_decode_attention(*decode_args, num_splits=2), paged_decode_attention_ref(*decode_args))
    query_start = torch.tensor([0, 4, 9], dtype=torch.int32, device=DEVICE)
    qx = torch.randn(9, 3, 12, generator=gen).to(DEVICE)
    extend_args = (qx, kv.k_cache, kv.v_cache, kv.block_tables, query_start, kv.seq_lens, 0.3)
    assert_close(paged_extend_attention(*extend_args), paged_extend_attention_ref(*extend_args))


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="bf16 runs only on CUDA (the interpreter's bf16 tl.dot is unreliable)")
def test_bf16_decode_and_extend_match_reference():
    gen = torch.Generator().manual_seed(9)
    kv = make_paged_kv(LONG_LENS, 16, 2, torch.bfloat16, gen, head_dim=64)
    q = torch.randn(3, 8, 64, generator=gen).to(DEVICE, torch.bfloat16)
    args = (q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 0.125)
    for num_splits in (1, 4):
        assert_close(paged_decode_attention(*args, num_splits=num_splits), paged_decode_attention_ref(*args))
    query_start = torch.tensor([0, 3, 4, 5], dtype=torch.int32, device=DEVICE)
    qx = torch.randn(5, 8, 64, generator=gen).to(DEVICE, torch.bfloat16)
    ext_args = (qx, kv.k_cache, kv.v_cache, kv.block_tables, query_start, kv.seq_lens, 0.125)
    assert_close(paged_extend_attention(*ext_args), paged_extend_attention_ref(*ext_args))
