"""The benchmarks' tiny sizes, run in-process through main(argv): the JSON they write has every
key, with values that follow from the workload. No timing assertions: timings belong in the
benchmarks' own output, never in tests."""

from __future__ import annotations

import json

import pytest

from benchmarks import common, memory, prefix

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def memory_out(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("memory") / "memory.json"
    memory.main(["--size", "tiny", "--json", str(path)])
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def prefix_out(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("prefix") / "prefix.json"
    prefix.main(["--size", "tiny", "--json", str(path)])
    return json.loads(path.read_text())


def test_quick_flag_selects_the_quick_size():
    assert common.parser("x").parse_args(["--quick"]).size == "quick"
    assert common.parser("x").parse_args([]).size == "full"


def test_percentile_interpolates_between_closest_ranks():
    assert common.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert common.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert common.percentile([7.0], 95) == 7.0


# -- memory ----------------------------------------------------------------------------------
def test_trace_is_seeded_and_fits_the_context():
    trace = memory.make_trace(500, 1024)
    assert trace == memory.make_trace(500, 1024)
    assert all(len(r.prompt) >= 1 and r.max_new_tokens >= 1 for r in trace)
    assert all(len(r.prompt) + r.max_new_tokens <= 1024 for r in trace)
    assert max(len(r.prompt) + r.max_new_tokens for r in trace) == 1024  # the long tail is clipped


def test_memory_json_has_every_key(memory_out):
    assert {"config", "trace", "contiguous", "paged", "targets", "size"} <= memory_out.keys()
    for policy in ("contiguous", "paged"):
        assert {"utilisation", "peak_running", "steps", "wall_s", "decode_tok_s"} <= memory_out[policy].keys()


def test_memory_utilisations_are_fractions_and_paged_is_higher(memory_out):
    c, p = memory_out["contiguous"]["utilisation"], memory_out["paged"]["utilisation"]
    assert 0 < c <= 1 and 0 < p <= 1
    assert p > c


def test_contiguous_runs_one_request_per_slab_and_paged_more(memory_out):
    cfg = memory_out["config"]
    slabs = cfg["num_blocks"] // cfg["contiguous_reserve_blocks"]
    assert memory_out["contiguous"]["peak_running"] == slabs
    assert memory_out["paged"]["peak_running"] > slabs


def test_paged_finishes_in_fewer_steps(memory_out):
    assert memory_out["paged"]["steps"] < memory_out["contiguous"]["steps"]


def test_contiguous_prefills_each_prompt_exactly_once(memory_out):
    trace = memory.make_trace(memory_out["trace"]["num_requests"], memory_out["config"]["max_seq_len"])
    assert memory_out["contiguous"]["prefill_tokens"] == sum(len(r.prompt) for r in trace)
    assert memory_out["contiguous"]["preempted"] == 0


def test_memory_timings_are_positive(memory_out):
    for policy in ("contiguous", "paged"):
        assert memory_out[policy]["wall_s"] > 0 and memory_out[policy]["decode_tok_s"] > 0


# -- prefix ----------------------------------------------------------------------------------
def test_prefix_json_has_every_key(prefix_out):
    assert {"config", "workload", "off", "on", "targets", "size"} <= prefix_out.keys()
    for setting in ("off", "on"):
        assert {"prefill_tokens", "hit_rate", "wall_s", "ttft_s"} <= prefix_out[setting].keys()


def test_without_sharing_every_prompt_token_is_computed(prefix_out):
    assert prefix_out["off"]["prefill_tokens"] == prefix_out["workload"]["prompt_tokens"]
    assert prefix_out["off"]["hit_rate"] == 0


def test_with_sharing_only_the_first_request_computes_the_prefix(prefix_out):
    w = prefix_out["workload"]
    reused = (w["num_requests"] - 1) * w["prefix_tokens"]
    assert prefix_out["on"]["prefill_tokens"] == w["prompt_tokens"] - reused
    assert prefix_out["on"]["hit_rate"] == pytest.approx(reused / w["prompt_tokens"])


def test_first_tokens_come_before_the_end(prefix_out):
    for setting in ("off", "on"):
        assert 0 < prefix_out[setting]["ttft_s"] <= prefix_out[setting]["wall_s"]


def test_the_live_answer_benchmark_asks_its_questions_of_the_recorded_lesson(capsys):
    from benchmarks import live_answer

    assert live_answer.main(["2"]) > 0
    assert capsys.readouterr().out.startswith("2 answers from step ")
