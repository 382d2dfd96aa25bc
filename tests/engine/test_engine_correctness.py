"""The cached engine computes what the model computes with no cache at all.

The reference is `Transformer.forward_full`: the whole sequence recomputed for every new token,
no KV cache, no block tables. Greedy decoding through the engine (paged or contiguous, shared
prefixes, preemption and recompute) must produce exactly the reference's tokens.
"""

from __future__ import annotations

import pytest
import torch

from engine import Engine, EngineConfig, ceil_div
from engine import engine as engine_module
from engine.request import Status

# Logits of the cached path against forward_full, float32 on CPU: both compute the same sums in a
# different order, so they agree to rounding (observed max |diff| ~3e-6 on logits of size ~4).
LOGITS_ATOL = 1e-4
LOGITS_RTOL = 1e-4

# Lengths 1, 4, 13, 16 and 33 bytes: multiples of block size 4 and 16, and not.
PROMPTS = ("K", "Keys", "Values, too: ", "Sixteen bytes!!!", "A prompt of thirty-three bytes...")
assert [len(p.encode()) for p in PROMPTS] == [1, 4, 13, 16, 33]


def greedy_reference(model, prompt_ids: list[int], num_new: int) -> list[int]:
    """Greedy tokens recomputing the full sequence (no cache) for each new token."""
    ids = list(prompt_ids)
    for _ in range(num_new):
        ids.append(int(model.forward_full(ids)[-1].argmax()))
    return ids[len(prompt_ids) :]


def assert_outputs_match_reference(engine: Engine, request_ids: list[int]) -> None:
    for rid in request_ids:
        req = engine.requests[rid]
        expected = greedy_reference(engine.model, req.prompt_ids, len(req.output_ids))
        assert req.output_ids == expected, f"{req.name} diverged from the no-cache greedy tokens"


def run_all(engine: Engine, prompts, max_new_tokens: int) -> list[int]:
    """Add every prompt, step until all finish; returns their ids (requests keep their KV)."""
    ids = [engine.add_request(p, max_new_tokens) for p in prompts]
    for _ in range(1000):
        if not engine.has_unfinished():
            break
        engine.step()
    assert all(engine.requests[i].status is Status.FINISHED for i in ids)
    assert all(len(engine.requests[i].output_ids) == max_new_tokens for i in ids)
    return ids


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_paged_engine_generates_the_no_cache_greedy_tokens(make_engine, block_size):
    engine = make_engine(block_size=block_size, num_blocks=64 * 16 // block_size)
    ids = run_all(engine, PROMPTS, max_new_tokens=12)
    assert_outputs_match_reference(engine, ids)


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_contiguous_engine_generates_the_no_cache_greedy_tokens(make_engine, block_size):
    reserve = ceil_div(33 + 12, block_size)  # room for the longest prompt and all its new tokens
    engine = make_engine(
        policy="contiguous", block_size=block_size, reserve_blocks=reserve, num_blocks=5 * reserve
    )
    ids = run_all(engine, PROMPTS, max_new_tokens=12)
    assert_outputs_match_reference(engine, ids)


@pytest.mark.parametrize("block_size", [4, 16])
def test_shared_prefix_ending_mid_block_gives_the_no_cache_greedy_tokens(make_engine, block_size):
    prefix = "System: answer in one line, please. "  # 36 bytes: ends mid-block for 16, and for 4 below
    prefix = prefix[:-1] if len(prefix.encode()) % block_size == 0 else prefix
    assert len(prefix.encode()) % block_size != 0
    engine = make_engine(block_size=block_size, num_blocks=64, prefix_sharing=True)
    ids = run_all(
        engine, [prefix + q for q in ("Explain pages.", "Why cache?", "How big?")], max_new_tokens=10
    )
    assert_outputs_match_reference(engine, ids)
    shared = len(prefix.encode()) // block_size * block_size
    assert [engine.requests[i].num_prefix_hit for i in ids] == [0, shared, shared]


@pytest.mark.parametrize("prompt", ["eight by", "nine byte"], ids=["page-multiple", "one-past-a-page"])
def test_fully_cached_prompt_gives_the_no_cache_greedy_tokens(make_engine, prompt):
    engine = make_engine(block_size=4, num_blocks=32, prefix_sharing=True)
    (first,) = run_all(engine, [prompt], max_new_tokens=8)
    engine.release(first)  # its prompt and generated pages stay in the prefix cache
    computed_before = engine.metrics().prefill_tokens_computed
    (second,) = run_all(engine, [prompt], max_new_tokens=8)
    assert_outputs_match_reference(engine, [first, second])
    assert engine.metrics().prefill_tokens_computed - computed_before >= 1


@pytest.mark.parametrize("prefix_sharing", [False, True], ids=["no-sharing", "sharing"])
def test_preempted_requests_recompute_to_the_no_cache_greedy_tokens(make_engine, serve_all, prefix_sharing):
    # 8 blocks of 4 tokens; each request grows to 7 blocks, so three cannot run side by side.
    engine = make_engine(block_size=4, num_blocks=8, prefix_sharing=prefix_sharing)
    ids = serve_all(engine, ["Page one", "Page two", "Page six"], max_new_tokens=20)
    assert engine.snapshot().metrics.preempted > 0
    assert all(len(engine.requests[i].output_ids) == 20 for i in ids)
    assert_outputs_match_reference(engine, ids)


def test_generate_returns_the_no_cache_greedy_text(make_engine):
    engine = make_engine(block_size=4, num_blocks=32)
    results = engine.generate(["Keys", "Values, too: "], max_new_tokens=6)
    for prompt, result in zip(["Keys", "Values, too: "], results, strict=True):
        assert result.token_ids == greedy_reference(engine.model, list(prompt.encode()), 6)
        assert result.text == engine.tokenizer.decode(result.token_ids)
    assert [r.status.value for r in engine.requests.values()] == ["released", "released"]


def test_default_model_generates_the_no_cache_greedy_tokens():
    engine = Engine(EngineConfig(prefix_sharing=True, weights="random"))  # random: no near-tied logits
    ids = run_all(engine, ["The KV cache holds keys", "The KV cache holds values and"], max_new_tokens=24)
    assert_outputs_match_reference(engine, ids)


class LogitsRecorder:
    """Stands in for the engine's model: runs it and records (positions, logits) of each call."""

    def __init__(self, model):
        self.model = model
        self.calls: list[tuple[list[int], torch.Tensor]] = []

    def __call__(self, batch, kv, backend):
        logits = self.model(batch, kv, backend)
        self.calls.append(([int(n) - 1 for n in batch.seq_lens], logits.clone()))
        return logits

    def __getattr__(self, name):
        return getattr(self.model, name)


def test_prefill_and_decode_logits_match_no_cache_forward(make_engine):
    engine = make_engine(block_size=4, num_blocks=32, prefix_sharing=True)
    recorder = LogitsRecorder(engine.model)
    engine.model = recorder
    prefix = "Shared prefix of the prompt: "
    for suffix in ("first", "second"):  # the second prefills on top of the first's cached pages
        recorder.calls.clear()
        (rid,) = run_all(engine, [prefix + suffix], max_new_tokens=10)
        req = engine.requests[rid]
        full = recorder.model.forward_full(req.all_ids[:-1])  # (T, vocab): logits at every position
        assert [pos for pos, _ in recorder.calls] == [
            [p] for p in range(len(req.prompt_ids) - 1, req.num_tokens - 1)
        ]
        for (pos,), logits in recorder.calls:
            worst = (logits[0] - full[pos]).abs().max().item()
            assert torch.allclose(logits[0], full[pos], atol=LOGITS_ATOL, rtol=LOGITS_RTOL), (
                f"pos {pos}: {worst}"
            )
    assert engine.requests[rid].num_prefix_hit > 0


@pytest.mark.parametrize(("rows", "forwards"), [(1, 5), (20, 3), (10_000, 1)])
def test_a_prefill_run_in_groups_of_sequences_gives_the_no_cache_greedy_tokens(make_engine, monkeypatch, rows,
                                                                               forwards):
    # PROMPTS are 1, 4, 13, 16 and 33 tokens: in groups of at most 20 rows, [1, 4, 13], [16], [33]
    monkeypatch.setattr(engine_module, "PREFILL_ROWS", rows)
    engine = make_engine(block_size=4, num_blocks=64)
    recorder = LogitsRecorder(engine.model)
    engine.model = recorder
    ids = [engine.add_request(p, 8) for p in PROMPTS]
    engine.step()  # every prompt's prefill
    assert len(recorder.calls) == forwards
    assert [pos for call, _ in recorder.calls for pos in call] == [len(p.encode()) - 1 for p in PROMPTS]
    for _ in range(20):
        engine.step()
    assert_outputs_match_reference(engine, ids)
