"""The C decode attention (kernels/cpu_native.py) against its torch reference, and the engine's
'native' backend against the 'torch' one.

The C kernel is compiled here with the machine's compiler (make test's machines have one: Debian's
gcc, installed by .ci/run when missing); without one these tests fail rather than skip, since the
engine would silently be slower. Unused cache slots hold POISON: a read outside a sequence shows."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from paged_kv_support import HEAD_DIM, make_paged_kv

from engine import Engine, EngineConfig, ModelConfig
from engine.backend import select_backend
from kernels import cpu_native
from kernels.reference import paged_decode_attention_ref

CPU = torch.device("cpu")
MIXED_LENS = [1, 15, 16, 17, 33, 64]


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, atol=2e-6, rtol=2e-5)


def test_the_kernel_builds_here():
    assert cpu_native.available(), cpu_native.unavailable_reason()


@pytest.mark.parametrize(("block_size", "group", "num_kv_heads", "head_dim"),
                         [(1, 1, 1, 16), (4, 2, 2, 16), (16, 4, 2, 32), (32, 2, 2, 32), (5, 3, 3, 12)])
def test_decode_matches_reference(block_size, group, num_kv_heads, head_dim):
    gen = torch.Generator().manual_seed(block_size)
    kv = make_paged_kv(MIXED_LENS + [300], block_size, num_kv_heads, torch.float32, gen, head_dim=head_dim,
                       device=CPU)
    q = torch.randn(len(MIXED_LENS) + 1, num_kv_heads * group, head_dim, generator=gen)
    args = (q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, head_dim**-0.5)
    _close(cpu_native.paged_decode_attention(*args), paged_decode_attention_ref(*args))


def test_block_reads_and_plan_match_reference():
    gen = torch.Generator().manual_seed(7)
    kv = make_paged_kv(MIXED_LENS, 4, 2, torch.float32, gen, device=CPU)
    q = torch.randn(len(MIXED_LENS), 4, HEAD_DIM, generator=gen)
    start = torch.randint(0, 5, (kv.k_cache.shape[0],), generator=gen, dtype=torch.int32)
    reads, expected = start.clone(), start.clone()
    plan = cpu_native.plan_decode(kv.block_tables, kv.seq_lens, 4)
    out = cpu_native.paged_decode_attention(q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 1.0,
                                            reads, plan=plan)
    ref = paged_decode_attention_ref(q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 1.0, expected)
    _close(out, ref)
    assert torch.equal(reads, expected) and bool((reads > start).any())


def test_what_the_c_does_not_take_goes_to_the_reference():
    """float16, and caches that are strided views (K and V of one fused tensor)."""
    gen = torch.Generator().manual_seed(3)
    for kv, dtype in ((make_paged_kv(MIXED_LENS, 4, 2, torch.float16, gen, device=CPU), torch.float16),
                      (make_paged_kv(MIXED_LENS, 4, 2, torch.float32, gen, fused_kv=True, device=CPU),
                       torch.float32)):
        q = torch.randn(len(MIXED_LENS), 4, HEAD_DIM, generator=gen).to(dtype)
        args = (q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 0.25)
        assert torch.equal(cpu_native.paged_decode_attention(*args), paged_decode_attention_ref(*args))


@pytest.mark.parametrize(("change", "message"), [
    (lambda kv: kv.seq_lens.fill_(0), "seq_lens must be in"),
    (lambda kv: kv.seq_lens.__setitem__(0, 10_000), "seq_lens must be in"),
    (lambda kv: kv.block_tables.__setitem__((1, 0), 10_000), "the pool has"),
    (lambda kv: kv.block_tables.__setitem__((1, 0), -2), "a block id is >= 0"),
])
def test_bad_tables_are_refused_before_the_c_reads_through_them(change, message):
    gen = torch.Generator().manual_seed(4)
    kv = make_paged_kv(MIXED_LENS, 4, 2, torch.float32, gen, device=CPU)
    change(kv)
    q = torch.randn(len(MIXED_LENS), 4, HEAD_DIM, generator=gen)
    with pytest.raises(ValueError, match=message):
        cpu_native.paged_decode_attention(q, kv.k_cache, kv.v_cache, kv.block_tables, kv.seq_lens, 1.0)


def test_loading_the_kernel_leaves_the_process_floats_alone():
    """-ffast-math at link time would flush the whole process's denormals to zero: it is compile-only."""
    assert cpu_native.available()
    assert float(torch.tensor([1e-40]) * 1.0) != 0.0


def test_without_a_compiler_auto_is_torch_and_native_says_why(tmp_path):
    code = ("from engine.backend import select_backend; import torch; from kernels import cpu_native;"
            "print(select_backend('auto', torch.device('cpu')).name); print(cpu_native.unavailable_reason());"
            "select_backend('native', torch.device('cpu'))")
    env = {"PATH": "/usr/bin:/bin", "CC": "no-such-compiler", "KVVIZ_NATIVE_CACHE": str(tmp_path),
           "PYTHONPATH": "."}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["torch", "no C compiler (no-such-compiler) on PATH"], proc.stderr
    assert "backend='native' is not available here: no C compiler" in proc.stderr


def test_auto_is_native_on_this_cpu():
    assert select_backend("auto", CPU).name == "native"


TINY = ModelConfig(num_layers=2, d_model=32, num_heads=4, num_kv_heads=2, d_ff=64, max_seq_len=128)


def _run(backend: str) -> tuple[list[list[int]], list[tuple[int, ...]]]:
    engine = Engine(EngineConfig(num_blocks=40, block_size=4, prefix_sharing=True, backend=backend,
                                 device="cpu", model=TINY, weights="random"))
    ids = [engine.add_request(p, max_new_tokens=12)
           for p in ["shared prefix, then a", "shared prefix, then b", "xyz"]]
    reads = []
    while engine.has_unfinished():
        engine.step()
        reads.append(engine.snapshot().block_reads)
    engine.check_integrity()
    assert engine.snapshot().backend == backend
    return [list(engine.requests[i].output_ids) for i in ids], reads


def test_native_and_torch_backends_generate_identical_tokens_and_block_reads():
    assert _run("native") == _run("torch")


def test_trained_model_native_matches_the_no_cache_forward():
    """The trained weights, 24 greedy tokens from four prompts, against the model with no cache at all."""
    engine = Engine(EngineConfig(num_blocks=64, block_size=16, backend="native", device="cpu",
                                 weights="trained"))
    prompts = ["The KV cache", "PagedAttention stores", "A radix tree", "Blocks fill"]
    results = engine.generate(prompts, 24)
    for prompt, result in zip(prompts, results, strict=True):
        ids = list(prompt.encode())
        for _ in range(24):
            ids.append(int(engine.model.forward_full(ids)[-1].argmax()))
        assert result.token_ids == ids[len(prompt.encode()):]
