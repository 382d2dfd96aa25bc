"""A recorded vLLM session played with no server (vllm_watch/recording.py, playback.py), on the
session node 04 ships (assets/vllm-recording.json, `make vllm-recording`): played through the live
watcher's code it gives the tree the events build on their own and the metrics of the last scrape,
the same every time; bad recordings are refused with the reason. (What node 04 shows of it:
tests/vllm/test_vllm_recording.py.)"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from vllm_watch.cache_tree import CacheTree
from vllm_watch.defaults import MODEL_NAME
from vllm_watch.metrics import parse_metrics
from vllm_watch.playback import play
from vllm_watch.recording import RecordingError, load, parse
from vllm_watch.wire import decode_frames

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "vllm-recording.json"
RAW = json.loads(SHIPPED.read_text())


@pytest.fixture(scope="module")
def played():
    return play(load(SHIPPED))


def test_played_through_the_watcher_it_gives_the_events_tree_and_the_last_scrapes_metrics(played):
    tree = CacheTree()
    for item in RAW["items"]:
        if "frames" in item:
            tree.apply(decode_frames([bytes.fromhex(f) for f in item["frames"]]))
    last_text = [i["metrics"] for i in RAW["items"] if i.get("metrics")][-1]
    end = played.last
    assert end.status == "recording" and end.model == MODEL_NAME
    assert end.tree == tree.view() and end.metrics == parse_metrics(last_text)
    assert play(load(SHIPPED)).steps == played.steps  # (played again: the same snapshots)
    assert [s.tree.num_stored for _, s in played.steps] == sorted(s.tree.num_stored for _, s in played.steps)
    assert played.at(-1) is played.steps[0][1] and played.at(1e9) is end


def _broken(change) -> dict:
    data = copy.deepcopy(RAW)
    change(data)
    return data


@pytest.mark.parametrize(("change", "says"), [
    (lambda d: d.update(format=99), "format 99"),
    (lambda d: d.pop("vllm_version"), "'vllm_version'"),
    (lambda d: d["items"][1].update(t=d["items"][0]["t"] - 1), "time goes backwards"),
    (lambda d: d["items"][[i for i, x in enumerate(d["items"]) if "frames" in x][0]].update(frames=["zz"]),
     "hex"),
    (lambda d: d.update(items=[i for i in d["items"] if "frames" in i]), "no /metrics scrape"),
    (lambda d: d["exchanges"][0].update(token_ids=["a"]), "integers"),
])
def test_a_bad_recording_is_refused_with_the_reason(change, says):
    with pytest.raises(RecordingError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse(_broken(change))


def test_a_missing_or_unreadable_recording_says_so(tmp_path):
    with pytest.raises(RecordingError, match="make vllm-recording"):
        load(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RecordingError, match="not JSON"):
        load(tmp_path / "bad.json")
