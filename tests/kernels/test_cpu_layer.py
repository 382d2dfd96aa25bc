"""The native backend's per-layer C (kernels/cpu_layer.py, kernels/cpu/fused_layer.c) and the forward
that runs it (engine/fused.py), against torch's operations and Transformer.forward's own path. (The
engine runs a small batch in one C call instead, engine/native_forward.py: the engine's runs here turn
that off, `no_c_forward`, so that every step is engine/fused.py's.)

RoPE, the KV stores and the residual adds must be torch's floats bit for bit; RMSNorm to its last
bit; the decode attention is cpu_native's. Every index the C reads or writes through is refused
before the C runs (the pool is then unchanged). KVVIZ_NATIVE=0 runs the torch path, same tokens."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading

import pytest
import torch
import torch.nn.functional as F
from paged_kv_support import make_paged_kv

from engine import Engine, EngineConfig, ModelConfig, fused, native_forward
from engine.model import Transformer, apply_rope, rope_tables
from kernels import cpu_layer, cpu_native
from kernels.reference import store_kv_ref

CPU = torch.device("cpu")
LENS = [1, 15, 16, 17, 33, 64]
TINY = ModelConfig(num_layers=2, d_model=32, num_heads=4, num_kv_heads=2, d_ff=64, max_seq_len=128)


@pytest.fixture
def no_c_forward(monkeypatch):
    monkeypatch.setattr(native_forward, "ENABLED", False)


def _layer_inputs(num_heads: int, num_kv_heads: int, head_dim: int, seed: int = 0):
    """A pool holding LENS' sequences (block size 4) and one new token per sequence at its end."""
    gen = torch.Generator().manual_seed(seed)
    kv = make_paged_kv(LENS, 4, num_kv_heads, torch.float32, gen, head_dim=head_dim, device=CPU)
    lens = torch.tensor(LENS, dtype=torch.int32)
    positions = lens.long() - 1
    slots = torch.stack([kv.block_tables[s, p // 4].long() * 4 + p % 4 for s, p in enumerate(positions)])
    qkv = torch.randn(len(LENS), (num_heads + 2 * num_kv_heads) * head_dim, generator=gen)
    cfg = ModelConfig(d_model=num_heads * head_dim, num_heads=num_heads, num_kv_heads=num_kv_heads)
    cos, sin = rope_tables(cfg)
    return kv, positions, slots, qkv, cos, sin


def _torch_rope_store(kv, positions, slots, qkv, cos, sin, num_heads, num_kv_heads, head_dim):
    """engine/model.py's Attention._qkv and the torch backend's store, on copies of the pool."""
    k_cache, v_cache = kv.k_cache.clone(), kv.v_cache.clone()
    x = qkv.view(-1, num_heads + 2 * num_kv_heads, head_dim)
    qk = apply_rope(x[:, : num_heads + num_kv_heads], cos[positions][:, None], sin[positions][:, None])
    store_kv_ref(k_cache, v_cache, qk[:, num_heads:], x[:, num_heads + num_kv_heads :], slots)
    return qk[:, :num_heads], k_cache, v_cache


@pytest.mark.parametrize(("num_heads", "num_kv_heads", "head_dim"), [(4, 2, 32), (6, 3, 12), (2, 1, 16)])
def test_rope_and_stores_are_torchs_floats_bit_for_bit(num_heads, num_kv_heads, head_dim):
    kv, positions, slots, qkv, cos, sin = _layer_inputs(num_heads, num_kv_heads, head_dim)
    q_ref, k_ref, v_ref = _torch_rope_store(kv, positions, slots, qkv, cos, sin, num_heads, num_kv_heads,
                                            head_dim)
    plan = cpu_layer.plan_layers(positions, slots, cos, sin, [kv.k_cache], [kv.v_cache], num_heads)
    assert plan is not None
    q = cpu_layer.rope_store(plan, 0, qkv)
    assert torch.equal(q, q_ref) and torch.equal(kv.k_cache, k_ref) and torch.equal(kv.v_cache, v_ref)


@pytest.mark.parametrize(("num_heads", "num_kv_heads", "head_dim"), [(4, 2, 32), (6, 3, 12)])
def test_decode_layer_is_rope_store_then_the_c_decode(num_heads, num_kv_heads, head_dim):
    kv, positions, slots, qkv, cos, sin = _layer_inputs(num_heads, num_kv_heads, head_dim, seed=1)
    q_ref, k_ref, v_ref = _torch_rope_store(kv, positions, slots, qkv, cos, sin, num_heads, num_kv_heads,
                                            head_dim)
    lens = torch.tensor(LENS, dtype=torch.int32)
    expected = cpu_native.paged_decode_attention(q_ref, k_ref, v_ref, kv.block_tables, lens, 0.3)
    decode = cpu_native.plan_decode(kv.block_tables, lens, 4)
    plan = cpu_layer.plan_layers(positions, slots, cos, sin, [kv.k_cache], [kv.v_cache], num_heads, decode)
    assert plan is not None
    reads = torch.zeros(kv.k_cache.shape[0], dtype=torch.int32)
    out = cpu_layer.decode_layer(plan, 0, qkv, 0.3)
    cpu_layer.count_reads(plan, reads)
    assert torch.equal(out, expected) and torch.equal(kv.k_cache, k_ref) and torch.equal(kv.v_cache, v_ref)
    assert int(reads.sum()) == num_kv_heads * sum((n + 3) // 4 for n in LENS)


def test_add_rms_norm_is_the_residual_add_then_torchs_rms_norm():
    gen = torch.Generator().manual_seed(2)
    for rows, dim in ((1, 128), (16, 128), (300, 32), (5, 24)):
        h, a = torch.randn(rows, dim, generator=gen), torch.randn(rows, dim, generator=gen)
        w = torch.rand(dim, generator=gen) + 0.5
        summed = h + a
        out = cpu_layer.add_rms_norm(h, a, w, 1e-5, torch.empty_like(h))
        assert torch.equal(h, summed)  # the add, bit for bit
        torch.testing.assert_close(out, F.rms_norm(summed, (dim,), w, 1e-5), atol=1e-6, rtol=1e-6)
        assert torch.equal(cpu_layer.add_rms_norm(h, None, w, 1e-5, torch.empty_like(h)), out)


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t["positions"].__setitem__(2, 128), "positions must be in"),
    (lambda t: t["positions"].__setitem__(0, -1), "positions must be in"),
    (lambda t: t["slots"].__setitem__(3, 10_000), "slot_mapping must be in"),
    (lambda t: t["slots"].__setitem__(1, -4), "slot_mapping must be in"),
    (lambda t: t["tables"].__setitem__((2, 0), 10_000), "the pool has"),
    (lambda t: t["tables"].__setitem__((2, 0), -3), "a block id is >= 0"),
    (lambda t: t["lens"].__setitem__(0, 0), "seq_lens must be in"),
    (lambda t: t["lens"].__setitem__(5, 10_000), "seq_lens must be in"),
])
def test_bad_indices_are_refused_before_the_c_runs(change, message):
    kv, positions, slots, qkv, _, _ = _layer_inputs(4, 2, 16, seed=3)
    cos, sin = rope_tables(ModelConfig(d_model=64, num_heads=4, num_kv_heads=2, max_seq_len=128))  # (128, 16)
    tensors = {"positions": positions, "slots": slots, "tables": kv.block_tables,
               "lens": torch.tensor(LENS, dtype=torch.int32)}
    change(tensors)
    k_before, v_before = kv.k_cache.clone(), kv.v_cache.clone()
    with pytest.raises(ValueError, match=message):
        decode = cpu_native.plan_decode(tensors["tables"], tensors["lens"], 4)
        cpu_layer.plan_layers(tensors["positions"], tensors["slots"], cos, sin, [kv.k_cache], [kv.v_cache], 4,
                              decode)
    assert torch.equal(kv.k_cache, k_before) and torch.equal(kv.v_cache, v_before)


@pytest.mark.parametrize("field", ["positions", "slot_mapping"])
def test_the_forward_refuses_a_batch_whose_rows_point_outside(field):
    engine = Engine(EngineConfig(num_blocks=16, block_size=4, device="cpu", model=TINY, weights="random"))
    engine.add_request("abcdefg", 4)
    batch = engine._prepare(engine._schedule())
    getattr(batch, field)[-1] = 4 * 16 if field == "slot_mapping" else TINY.max_seq_len
    k_before = [t.clone() for t in engine.kv.k]
    with pytest.raises(ValueError, match="must be in"):
        engine.model(batch, engine.kv, engine.backend)
    assert all(torch.equal(a, b) for a, b in zip(engine.kv.k, k_before, strict=True))


def test_wrong_shapes_are_refused_and_what_the_c_does_not_take_is_left_to_torch():
    kv, positions, slots, qkv, cos, sin = _layer_inputs(4, 2, 16, seed=4)
    plan = cpu_layer.plan_layers(positions, slots, cos, sin, [kv.k_cache], [kv.v_cache], 4)
    assert plan is not None
    with pytest.raises(ValueError, match="qkv must be"):
        cpu_layer.rope_store(plan, 0, qkv[:-1])
    with pytest.raises(ValueError, match="qkv must be"):
        cpu_layer.rope_store(plan, 0, torch.cat([qkv, qkv], dim=1)[:, :128])  # the shape, not contiguous
    with pytest.raises(ValueError, match="decode plan"):
        cpu_layer.decode_layer(plan, 0, qkv, 1.0)
    h = torch.randn(4, 32)
    for a, w, out in ((torch.randn(3, 32), torch.ones(32), torch.empty(4, 32)),
                      (None, torch.ones(31), torch.empty(4, 32)), (None, torch.ones(32), torch.empty(4, 31)),
                      (None, torch.ones(32, dtype=torch.float64), torch.empty(4, 32))):
        with pytest.raises(ValueError, match="add_rms_norm takes"):
            cpu_layer.add_rms_norm(h, a, w, 1e-5, out)
    half = make_paged_kv(LENS, 4, 2, torch.float16, torch.Generator().manual_seed(0), device=CPU)
    strided = make_paged_kv(LENS, 4, 2, torch.float32, torch.Generator().manual_seed(0), fused_kv=True,
                            device=CPU)
    for pool in (half, strided):
        assert cpu_layer.plan_layers(positions, slots, cos, sin, [pool.k_cache], [pool.v_cache], 4) is None


def _logits_both_ways(engine: Engine, prompts: list[str], max_new_tokens: int):
    """Each step's logits from engine/fused.py's forward and from Transformer.forward's own path, on two
    copies of the engine's state (same KV pool before the step); the engine runs on the fused ones."""
    unfused = dataclasses.replace(engine.backend, fused=False)
    assert engine.backend.fused
    for p in prompts:
        engine.add_request(p, max_new_tokens)
    pairs = []

    def both(batch):
        twin = engine.clone()
        expected = twin.model(dataclasses.replace(batch, block_reads=None), twin.kv, unfused)
        got = engine.model(batch, engine.kv, engine.backend)
        pairs.append((batch.is_decode, got, expected, engine.kv.k[-1].clone(), twin.kv.k[-1]))
        return got

    engine._run_model = both  # type: ignore[method-assign]
    while engine.has_unfinished():
        engine.step()
    return pairs


@pytest.mark.parametrize("weights", ["random", "trained"])
def test_the_fused_forward_gives_the_unfused_logits_and_kv(weights, no_c_forward):
    model = TINY if weights == "random" else ModelConfig()
    engine = Engine(EngineConfig(num_blocks=64, block_size=8, prefix_sharing=True, device="cpu", model=model,
                                 weights=weights))
    prompts = ["shared prefix, then a", "shared prefix, then b", "xyz", "The KV cache"]
    pairs = _logits_both_ways(engine, prompts, 10)
    assert {p[0] for p in pairs} == {True, False}  # prefills and decodes
    for _, got, expected, k_got, k_expected in pairs:
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
        assert torch.equal(got.argmax(-1), expected.argmax(-1))
        torch.testing.assert_close(k_got, k_expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("c_forward", [False, True])
def test_native_and_torch_generate_the_same_tokens_on_the_trained_model(c_forward, monkeypatch):
    """With the C forward off (every step engine/fused.py's), and on for small batches only (a decode of
    at most 3 sequences, a prefill of at most 16 tokens: the rest engine/fused.py's), as the engine
    mixes them."""
    monkeypatch.setattr(native_forward, "ENABLED", c_forward)
    monkeypatch.setattr(native_forward, "MAX_ROWS", 3)
    monkeypatch.setattr(native_forward, "PREFILL_ROWS", 16)
    calls = {"fused": 0}
    fused_forward = fused.forward

    def counted(*args):
        calls["fused"] += 1
        return fused_forward(*args)

    monkeypatch.setattr(fused, "forward", counted)
    prompts = [f"[{i}] What does a block of the KV cache hold?" for i in range(6)] + ["The KV cache", "ab"]
    results = {}
    for name in ("native", "torch"):
        engine = Engine(EngineConfig(num_blocks=96, block_size=16, backend=name, device="cpu",
                                     weights="trained"))
        assert engine.backend.fused == (name == "native")
        ids = [engine.add_request(p, 24 + 8 * i) for i, p in enumerate(prompts)]  # (the batch shrinks)
        fused_before = calls["fused"]
        steps = 0
        while engine.has_unfinished():
            engine.step()
            steps += 1
        results[name] = [list(engine.requests[i].output_ids) for i in ids]
        if name == "native":
            assert 0 < calls["fused"] - fused_before <= steps
            assert (calls["fused"] - fused_before < steps) == c_forward
    assert results["native"] == results["torch"]


def test_weights_changed_in_place_are_seen(no_c_forward):
    model = Transformer(TINY)
    model.init_weights(0)
    model.eval().requires_grad_(False)
    engine = Engine(EngineConfig(num_blocks=32, block_size=4, device="cpu", model=TINY, weights="random"))
    engine.model = model
    first = fused.layer_weights(model)
    assert fused.layer_weights(model) is first  # kept
    with torch.no_grad():
        model.blocks[1].attn.k_proj.weight.mul_(2.0)
    again = fused.layer_weights(model)
    assert again is not first  # (q_proj's 4 heads × 8 dims, then k_proj's rows)
    assert torch.equal(again[1][1].t()[32:48], model.blocks[1].attn.k_proj.weight)
    pairs = _logits_both_ways(engine, ["abc", "defgh"], 4)
    for _, got, expected, _, _ in pairs:
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_forwards_on_two_threads_at_once_keep_their_own_scratch(no_c_forward):
    def tokens(out: list) -> None:
        engine = Engine(EngineConfig(num_blocks=64, block_size=8, device="cpu", model=TINY, weights="random"))
        out.extend(r.token_ids for r in engine.generate(["abcdefgh" * 4, "xyz", "The KV cache"] * 3, 16))

    alone: list = []
    tokens(alone)
    outs: list[list] = [[], []]
    threads = [threading.Thread(target=tokens, args=(o,)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outs[0] == alone and outs[1] == alone


def test_with_the_c_off_the_engine_runs_torchs_path_with_the_same_tokens(tmp_path):
    code = ("from engine import Engine, EngineConfig; from kernels import cpu_layer;"
            "e = Engine(EngineConfig(num_blocks=64, block_size=16, device='cpu', weights='trained'));"
            "print(e.backend.name, e.backend.fused, cpu_layer.available());"
            "print([r.token_ids for r in e.generate(['The KV cache', 'A radix tree'], 24)])")
    env = {"PATH": "/usr/bin:/bin", "KVVIZ_NATIVE": "0", "KVVIZ_NATIVE_CACHE": str(tmp_path),
           "PYTHONPATH": "."}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    lines = proc.stdout.splitlines()
    assert lines[:1] == ["torch False False"], proc.stderr
    engine = Engine(EngineConfig(num_blocks=64, block_size=16, device="cpu", weights="trained"))
    assert engine.backend.name == "native" and engine.backend.fused
    assert lines[1] == str([r.token_ids for r in engine.generate(["The KV cache", "A radix tree"], 24)])
