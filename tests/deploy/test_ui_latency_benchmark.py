"""The UI latency benchmark at a tiny size, run in-process through main(argv): it serves the app,
drives Chromium through 3 interactions per node and writes JSON with every key; every latency is
a positive, finite number. No timing thresholds: timings belong in the benchmark's own output."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import common, ui_latency

NUM_INTERACTIONS = 3
FIGURES = ("p50_ms", "p95_ms", "max_ms", "dom_p50_ms", "dom_p95_ms", "server_ms_p50", "server_ms_p95")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("ui_latency") / "ui_latency.json"
    ui_latency.main(["--interactions", str(NUM_INTERACTIONS), "--json", str(path)])
    return json.loads(path.read_text())


def _summaries(out: dict):
    """(where, summary) for every node, every action of a node, and overall."""
    for node, s in out["nodes"].items():
        yield node, s
        for action, a in s["by_action"].items():
            yield f"{node} · {action}", a
    yield "overall", out["overall"]


@pytest.mark.ui
def test_json_has_the_three_live_nodes_overall_machine_and_date(out):
    assert set(out["nodes"]) == {"fragmentation", "paging", "radix"}
    assert {"nodes", "overall", "machine", "date"} <= set(out)
    assert out["machine"]["cpu_count"] >= 1 and out["machine"]["chromium"]
    assert out["date"].startswith("20")
    assert out["busy_processes"] == 0


@pytest.mark.ui
def test_each_node_measures_the_requested_interactions(out):
    assert [s["n"] for s in out["nodes"].values()] == [NUM_INTERACTIONS] * 3
    assert out["overall"]["n"] == 3 * NUM_INTERACTIONS
    for s in out["nodes"].values():
        assert sum(a["n"] for a in s["by_action"].values()) == NUM_INTERACTIONS


@pytest.mark.ui
def test_every_measured_latency_is_a_positive_finite_number(out):
    for where, s in _summaries(out):
        for key in FIGURES:
            value = s[key]
            assert isinstance(value, float) and math.isfinite(value) and value > 0, (where, key, value)
        assert s["p50_ms"] <= s["p95_ms"] <= s["max_ms"], where


@pytest.mark.ui
def test_target_verdict_follows_the_overall_p95(out):
    o = out["overall"]
    assert o["target_p95_ms"] == ui_latency.TARGET_P95_MS
    assert o["target_met"] == (o["p95_ms"] <= ui_latency.TARGET_P95_MS)


@pytest.mark.slow
def test_prefix_sharing_toggle_is_planned_against_the_lesson_figures():
    initial, steps = ui_latency.plan("radix", 2)
    assert initial["BLOCKS STORED"] == "36 blk"
    assert [(s.action.name, s.role, s.changed, s.after["BLOCKS STORED"], s.after["SAVED"])
            for s in steps] == [
        ("Prefix sharing", "checkbox", ["BLOCKS STORED", "SAVED"], "18 blk", "50%"),
        ("Prefix sharing", "checkbox", ["BLOCKS STORED", "SAVED"], "36 blk", "0%"),
    ]
    assert all(s.server_ms > 0 for s in steps)


@pytest.mark.slow
def test_add_request_is_timed_to_its_first_update_and_then_waited_out():
    _initial, steps = ui_latency.plan("paging", 3)
    assert [s.action.name for s in steps] == ["Add request"] * 3
    for s, following in zip(steps, steps[1:], strict=False):
        assert s.settled is not None and s.settled != s.after  # it generated on after the first update
        assert following.before == s.settled  # the next action starts from the finished run


def test_busy_processes_run_only_inside_the_block():
    with ui_latency.busy_processes(1) as procs:
        assert len(procs) == 1 and procs[0].poll() is None
    assert procs[0].poll() is not None


def test_busy_option_is_range_checked():
    assert ui_latency.parse_args(["--busy", "2"]).busy == 2
    with pytest.raises(SystemExit):
        ui_latency.parse_args(["--busy", "-1"])


def test_summary_figures_are_floats_even_from_whole_millisecond_times():
    s = ui_latency.summary([60, 61], [60, 60], [1, 2])  # (the browser's clock can give whole ms)
    assert s["n"] == 2
    assert all(isinstance(v, float) for k, v in s.items() if k != "n")


def test_percentile_interpolates_between_closest_ranks():
    assert common.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert common.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert common.percentile([7.0], 95) == 7.0
