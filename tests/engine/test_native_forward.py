"""The C forward (engine/native_forward.py, kernels/cpu/forward.c): the torch forward's logits and KV
writes to float rounding, for a decode and for a prefill on a cached prefix; the same greedy tokens;
every index refused before the C reads through it; a clone's C bound to the clone's own pool."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from engine import Engine, EngineConfig, ModelConfig
from engine import native_forward as ns
from engine.model import ForwardBatch

pytestmark = pytest.mark.skipif(not ns.available(), reason="no C compiler: the C step is not built")

# two layers, grouped KV heads, an odd head count per group: the shapes the C indexes by
SMALL = ModelConfig(num_layers=2, d_model=48, num_heads=6, num_kv_heads=2, d_ff=80, max_seq_len=160)
PROMPTS = ["The KV cache holds", "A page table maps pages to blocks", "x", "shared, then a", "shared, then b"]


def _engine(native: bool, monkeypatch, **config) -> Engine:
    monkeypatch.setattr(ns, "ENABLED", native)
    return Engine(EngineConfig(**{"num_blocks": 40, "block_size": 4, "backend": "native", "device": "cpu",
                                  "model": SMALL, "weights": "random", **config}))


def _next_batch(engine: Engine, decode: bool = True) -> ForwardBatch:
    """The batch of the engine's next step (scheduled: its blocks taken, its tokens recorded)."""
    work = engine._schedule()
    assert work is not None and work.is_prefill != decode
    return engine._prepare(work)


@pytest.mark.parametrize("kind", ["decode", "prefill on a cached prefix"])
def test_the_c_gives_the_torch_forwards_logits_and_kv(monkeypatch, kind):
    engine = _engine(False, monkeypatch, prefix_sharing=True)
    for p in PROMPTS:
        engine.add_request(p, max_new_tokens=6)
    engine.step()  # (every prompt prefilled by the torch forward)
    engine.step()
    if kind == "decode":
        batch = _next_batch(engine)
        assert batch.token_ids.shape[0] == len(PROMPTS)
    else:  # (a question on the cached prompt's pages, and one more prompt beside it)
        engine.add_request(PROMPTS[1] + " and then some", max_new_tokens=3)
        engine.add_request("a new one", max_new_tokens=3)
        batch = _next_batch(engine, decode=False)
        assert batch.query_start.tolist()[1] < int(batch.seq_lens[0]), "the first must extend a cached prefix"
        assert batch.token_ids.shape[0] > 2
    k_before = [k.clone() for k in engine.kv.k]
    torch_reads, c_reads = ((torch.zeros(40, dtype=torch.int32) if kind == "decode" else None)
                            for _ in range(2))
    want = engine.model(ForwardBatch(**{**batch.__dict__, "block_reads": torch_reads}), engine.kv,
                        engine.backend)
    k_torch, v_torch = [k.clone() for k in engine.kv.k], [v.clone() for v in engine.kv.v]
    for k, k0 in zip(engine.kv.k, k_before, strict=True):  # (the rows written put back: the C writes them)
        k.copy_(k0)
    step = ns.NativeForward(engine.model, engine.kv)
    got = step(ForwardBatch(**{**batch.__dict__, "block_reads": c_reads}))
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    for a, b in zip([*engine.kv.k, *engine.kv.v], [*k_torch, *v_torch], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert any(not torch.equal(a, b) for a, b in zip(k_torch, k_before, strict=True)), "no K was written"
    if kind == "decode":
        assert torch.equal(c_reads, torch_reads) and c_reads.sum() > 0


@pytest.mark.parametrize("sharing", [False, True])
def test_the_same_greedy_tokens_with_the_c_step_or_without(monkeypatch, sharing):
    runs = []
    for native in (False, True):
        engine = _engine(native, monkeypatch, prefix_sharing=sharing)
        runs.append([r.token_ids for r in engine.generate(PROMPTS, 20)])
        assert ("_native_forward" in engine.__dict__) == native
        engine.check_integrity()
    assert runs[0] == runs[1]


def _prepared(monkeypatch, decode: bool = True) -> tuple[Engine, ForwardBatch]:
    engine = _engine(True, monkeypatch)
    for p in (PROMPTS[0], PROMPTS[2], PROMPTS[3]):  # (33 prompt tokens: within PREFILL_ROWS)
        engine.add_request(p, max_new_tokens=6)
    if decode:
        engine.step()
    return engine, _next_batch(engine, decode)


CASES = [(bad, decode) for bad in ("token", "slot", "position", "block", "lengths")
         for decode in (True, False)]


@pytest.mark.parametrize(("bad", "decode"), [*CASES, ("starts", False)])  # (a decode's starts are its rows)
def test_an_index_out_of_range_is_refused_before_the_c_runs(monkeypatch, bad, decode):
    engine, batch = _prepared(monkeypatch, decode)
    fields = dict(batch.__dict__)
    if bad == "token":
        fields["token_ids"] = batch.token_ids.clone().fill_(SMALL.vocab_size)
    elif bad == "slot":
        fields["slot_mapping"] = batch.slot_mapping + 40 * 4
    elif bad == "position":
        fields["positions"] = batch.positions + 1
    elif bad == "block":
        fields["block_tables"] = batch.block_tables.clone().fill_(40)
    elif bad == "lengths":  # (past the model's context, and past the tables' pages)
        fields["seq_lens"] = batch.seq_lens + SMALL.max_seq_len
    else:
        fields["query_start"] = batch.query_start.flip(0)
    kv = [t.clone() for t in (*engine.kv.k, *engine.kv.v)]
    with pytest.raises(ValueError):
        ns.NativeForward(engine.model, engine.kv)(ForwardBatch(**fields))
    assert all(torch.equal(a, b) for a, b in zip(kv, (*engine.kv.k, *engine.kv.v), strict=True))


def test_what_the_c_does_not_take_goes_to_the_torch_forward(monkeypatch):
    engine, batch = _prepared(monkeypatch)
    c = ns.NativeForward(engine.model, engine.kv)
    assert c.fits(batch)
    monkeypatch.setattr(ns, "MAX_ROWS", 2)
    assert not c.fits(batch)  # (three sequences)
    engine, prefill = _prepared(monkeypatch, decode=False)
    c = ns.NativeForward(engine.model, engine.kv)
    assert c.fits(prefill)
    monkeypatch.setattr(ns, "PREFILL_ROWS", prefill.token_ids.shape[0] - 1)
    assert not c.fits(prefill)
    with torch.no_grad():
        engine.model.lm_head.weight.mul_(1.0)  # (the weights changed in place: read again)
    assert not c.fits(batch)


def test_a_clone_steps_its_own_pool(monkeypatch):
    engine = _engine(True, monkeypatch)
    for p in PROMPTS:
        engine.add_request(p, max_new_tokens=8)
    for _ in range(3):
        engine.step()
    kv = [t.clone() for t in (*engine.kv.k, *engine.kv.v)]
    twin = engine.clone()
    while twin.has_unfinished():
        twin.step()
    assert twin._native_forward.kv is twin.kv
    assert all(torch.equal(a, b) for a, b in zip(kv, (*engine.kv.k, *engine.kv.v), strict=True)), \
        "the clone's steps wrote into the original's pool"
    while engine.has_unfinished():
        engine.step()
    assert [r.output_ids for r in engine.requests.values()] == [r.output_ids for r in twin.requests.values()]


def test_kvviz_native_forward_0_keeps_the_torch_forward():
    code = ("from engine import Engine, EngineConfig; "
            "e = Engine(EngineConfig(backend='native', device='cpu')); "
            "e.generate(['abc'], 3); print('_native_forward' in e.__dict__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "KVVIZ_NATIVE_FORWARD": "0"}, check=True)
    assert out.stdout.strip() == "False"
