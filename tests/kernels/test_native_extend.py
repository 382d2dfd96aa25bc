"""The C extend (prefill) attention (kernels/cpu_extend.py) against its torch reference, and the
engine's 'native' backend with prefix sharing against the model with no cache and the 'torch' backend.

Like tests/kernels/test_native_kernel.py, these need the machine's C compiler (they fail, not skip, without
one). Unused cache slots hold POISON: a read outside a sequence, or past a query's position, shows."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from paged_kv_support import HEAD_DIM, make_paged_kv

from engine import Engine, EngineConfig, ModelConfig, native_forward
from kernels import cpu_build, cpu_extend, cpu_native
from kernels.reference import paged_extend_attention_ref

CPU = torch.device("cpu")
# (cached prefix, new tokens) per sequence: one whole prompt, questions on a prefix crossing block and
# tile boundaries, one new token, a sequence with no new tokens, one long prefix
BATCH = [(0, 37), (16, 17), (15, 1), (1, 0), (5, 8), (130, 24), (267, 33)]


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, atol=2e-6, rtol=2e-5)


def _args(batch, block_size, group, num_kv_heads, head_dim, seed=0, dtype=torch.float32, fused_kv=False):
    gen = torch.Generator().manual_seed(seed)
    kv = make_paged_kv([p + n for p, n in batch], block_size, num_kv_heads, dtype, gen, head_dim=head_dim,
                       fused_kv=fused_kv, device=CPU)
    starts = torch.tensor(list(itertools.accumulate((n for _, n in batch), initial=0)), dtype=torch.int32)
    q = torch.randn(int(starts[-1]), num_kv_heads * group, head_dim, generator=gen).to(dtype)
    return q, kv.k_cache, kv.v_cache, kv.block_tables, starts, kv.seq_lens, head_dim**-0.5


def test_the_kernel_builds_here():
    assert cpu_native.available(), cpu_native.unavailable_reason()


@pytest.mark.parametrize(("block_size", "group", "num_kv_heads", "head_dim"),
                         [(1, 1, 1, 16), (4, 2, 2, 16), (16, 2, 2, 32), (32, 2, 2, 32), (16, 4, 2, 32),
                          (5, 3, 3, 12), (8, 16, 1, 8), (16, 7, 1, 32)])
def test_extend_matches_reference(block_size, group, num_kv_heads, head_dim):
    args = _args(BATCH, block_size, group, num_kv_heads, head_dim, seed=block_size + group)
    _close(cpu_extend.paged_extend_attention(*args), paged_extend_attention_ref(*args))


@settings(max_examples=40, deadline=None)
@given(batch=st.lists(st.tuples(st.integers(0, 70), st.integers(0, 40)), min_size=1, max_size=5)
       .filter(lambda b: any(n for _, n in b) and all(p + n for p, n in b)),
       block_size=st.sampled_from([1, 3, 4, 16]), group=st.sampled_from([1, 2, 3, 4]),
       num_kv_heads=st.sampled_from([1, 2]), seed=st.integers(0, 2**16))
def test_extend_matches_reference_on_any_batch(batch, block_size, group, num_kv_heads, seed):
    args = _args(batch, block_size, group, num_kv_heads, HEAD_DIM, seed=seed)
    _close(cpu_extend.paged_extend_attention(*args), paged_extend_attention_ref(*args))


def test_a_batch_without_a_cached_prefix_is_the_cs_too():
    """Pure prefills (prompts' first: the reference's path there is SDPA's causal kernel), by the C."""
    args = _args([(0, 9), (0, 20), (0, 33)], 4, 2, 2, HEAD_DIM)
    _close(cpu_extend.paged_extend_attention(*args), paged_extend_attention_ref(*args))
    assert not torch.equal(cpu_extend.paged_extend_attention(*args), paged_extend_attention_ref(*args))


def test_what_the_c_does_not_take_goes_to_the_reference():
    """float16, caches that are strided views, and more query heads per KV head than a tile holds:
    the reference's own result."""
    cases = [_args(BATCH, 4, 2, 2, HEAD_DIM, dtype=torch.float16),
             _args(BATCH, 4, 2, 2, HEAD_DIM, fused_kv=True),
             _args(BATCH, 4, 17, 1, HEAD_DIM)]
    for args in cases:
        assert torch.equal(cpu_extend.paged_extend_attention(*args), paged_extend_attention_ref(*args))


def _set(tensor_index, value):
    def change(args):
        args[tensor_index[0]][tensor_index[1]] = value
    return change


@pytest.mark.parametrize(("change", "message"), [
    (_set((4, 0), 1), "query_start must rise from 0"),
    (_set((4, -1), 1000), "query_start must rise from 0"),
    (_set((4, 2), 100), "query_start must rise from 0"),
    (_set((5, 1), 10), "seq_lens must be at least each sequence's new tokens"),
    (_set((5, 0), 10_000), "seq_lens must be at least"),
    (_set((3, (1, 0)), 10_000), "the pool has blocks"),
    (_set((3, (1, 0)), -2), "block_tables name block -2"),
])
def test_bad_tables_are_refused_before_the_c_reads_through_them(change, message):
    args = list(_args(BATCH, 4, 2, 2, HEAD_DIM))
    change(args)
    with pytest.raises(ValueError, match=message):
        cpu_extend.paged_extend_attention(*args)


TINY = ModelConfig(num_layers=2, d_model=32, num_heads=4, num_kv_heads=2, d_ff=64, max_seq_len=256)
SHARED = "A long shared system prompt, several blocks of it, then each question: "
QUESTIONS = ["why?", "how many blocks does it take", "and the KV cache, where is it kept", "x"]


def _serve(backend: str, sharing: bool, block_size: int) -> list[list[int]]:
    engine = Engine(EngineConfig(num_blocks=200, block_size=block_size, prefix_sharing=sharing,
                                 backend=backend, device="cpu", model=TINY, weights="random"))
    first = engine.generate([SHARED + QUESTIONS[0]], 6)  # cached before the others arrive
    rest = engine.generate([SHARED + q for q in QUESTIONS[1:]], 10)  # admitted together, each on the prefix
    engine.check_integrity()
    assert not sharing or engine.metrics().prefix_hit_tokens > 0
    return [r.token_ids for r in first + rest]


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_native_sharing_gives_the_tokens_of_torch_and_of_no_sharing(block_size, monkeypatch):
    library, calls = cpu_build.load(), []

    def extend(*args):
        calls.append(args)
        assert library.extend is not None
        library.extend(*args)

    monkeypatch.setattr(cpu_extend, "load", lambda: dataclasses.replace(library, extend=extend))
    monkeypatch.setattr(native_forward, "ENABLED", False)  # (the torch forward, so that it calls the kernel)
    native = _serve("native", True, block_size)
    # the first prompt's prefill and the questions' (in every layer but the last: a decode's there)
    assert len(calls) == 2 * (TINY.num_layers - 1)
    assert native == _serve("torch", True, block_size) == _serve("native", False, block_size)
    monkeypatch.setattr(native_forward, "ENABLED", True)  # (the whole forward in C: the same tokens)
    assert _serve("native", True, block_size) == native


def test_trained_model_native_sharing_matches_the_no_cache_forward():
    """The trained weights, prompts on one shared prefix, against the model with no cache at all."""
    engine = Engine(EngineConfig(num_blocks=128, block_size=16, backend="native", device="cpu",
                                 weights="trained", prefix_sharing=True))
    prompts = [SHARED + q for q in QUESTIONS]
    results = engine.generate(prompts[:1], 12) + engine.generate(prompts[1:], 12)
    assert engine.metrics().prefix_hit_tokens >= 3 * 64
    for prompt, result in zip(prompts, results, strict=True):
        ids = list(prompt.encode())
        for _ in range(12):
            ids.append(int(engine.model.forward_full(ids)[-1].argmax()))
        assert result.token_ids == ids[len(prompt.encode()):]
