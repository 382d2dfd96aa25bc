"""kernels/reference.py's extend attention: its two paths (SDPA's causal mask when no sequence has
a cached prefix, an explicit mask otherwise) against attention written out one query at a time."""

from __future__ import annotations

import pytest
import torch
from paged_kv_support import HEAD_DIM, make_paged_kv

from kernels.reference import paged_extend_attention_ref

CPU = torch.device("cpu")


def _one_query_at_a_time(q, kv, query_start, scale):
    out = torch.empty_like(q)
    block_size, num_kv_heads = kv.k_cache.shape[1], kv.k_cache.shape[2]
    group = q.shape[1] // num_kv_heads
    for s, total in enumerate(kv.seq_lens.tolist()):
        a, b = int(query_start[s]), int(query_start[s + 1])
        pages = kv.block_tables[s, : (total + block_size - 1) // block_size].long()
        k = kv.k_cache[pages].reshape(-1, num_kv_heads, HEAD_DIM)[:total]  # (total, KVH, D)
        v = kv.v_cache[pages].reshape(-1, num_kv_heads, HEAD_DIM)[:total]
        for row in range(a, b):
            pos = total - (b - a) + (row - a)  # this query's position: it sees keys 0..pos
            for h in range(q.shape[1]):
                w = torch.softmax(k[: pos + 1, h // group] @ q[row, h] * scale, dim=0)
                out[row, h] = w @ v[: pos + 1, h // group]
    return out


@pytest.mark.parametrize(("lens", "new"), [
    ([1, 15, 17, 33], [1, 15, 17, 33]),  # no prefix anywhere: the causal path
    ([5, 1, 32], [5, 1, 32]),
    ([9, 7, 40], [9, 3, 20]),  # two sequences on a cached prefix: the masked path
    ([8, 8], [1, 8]),
], ids=["causal", "causal-2", "masked", "masked-2"])
def test_extend_paths_match_attention_one_query_at_a_time(lens, new):
    gen = torch.Generator().manual_seed(len(new) + sum(new))
    kv = make_paged_kv(lens, 4, 2, torch.float32, gen, device=CPU)
    q = torch.randn(sum(new), 4, HEAD_DIM, generator=gen)
    query_start = torch.tensor([0, *torch.tensor(new).cumsum(0).tolist()], dtype=torch.int32)
    got = paged_extend_attention_ref(q, kv.k_cache, kv.v_cache, kv.block_tables, query_start, kv.seq_lens,
                                     0.3)
    torch.testing.assert_close(got, _one_query_at_a_time(q, kv, query_start, 0.3), atol=2e-6, rtol=2e-5)
