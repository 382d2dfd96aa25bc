"""The watcher's thread against a stand-in for vLLM (no vLLM needed): an HTTP server answering
/metrics and /v1/models with what a real vLLM answered, a ZeroMQ publisher and replay socket
sending the KV-event messages it sent (tests/fixtures/vllm). The watcher connects, gets what was
published before it joined from the replay socket and the rest as published, and builds the tree
those messages build; a server that stops answering is reported disconnected; a recorder's items
are a recording that plays back to the live watcher's tree and metrics."""

from __future__ import annotations

import pytest
from vllm_standin_support import FRAMES, RECORDED, StandIn

from vllm_watch.cache_tree import CacheTree
from vllm_watch.metrics import parse_metrics
from vllm_watch.monitor import Monitor
from vllm_watch.playback import play
from vllm_watch.recorder import Recorder
from vllm_watch.recording import FORMAT, parse
from vllm_watch.wire import decode_frames


@pytest.fixture
def vllm(tmp_path):
    stand_in = StandIn(tmp_path)
    yield stand_in
    stand_in.close()


def fixture_tree():
    tree = CacheTree()
    for frames in FRAMES:
        tree.apply(decode_frames(frames))
    return tree.view()


def test_the_watcher_replays_what_it_missed_then_follows_and_sees_the_server_go(vllm):
    for i in range(3):
        vllm.publish(i)  # (before the watcher joins: only the replay socket can give these)
    mon = Monitor(vllm.endpoints).start()
    try:
        snap = mon.wait_for(lambda s: s.status == "connected" and s.last_seq == 2, timeout=20)
        assert snap.model == "kvviz" and snap.metrics == parse_metrics(RECORDED["metrics"])
        for i in range(3, len(FRAMES)):
            vllm.publish(i)
        snap = mon.wait_for(lambda s: s.last_seq == len(FRAMES) - 1, timeout=20)
        assert snap.tree == fixture_tree() and snap.history and snap.restarts == 0
        vllm.stop_http()
        assert mon.wait_for(lambda s: s.status == "disconnected", timeout=20).tree == snap.tree
    finally:
        mon.stop()


def test_a_recorders_items_play_back_to_the_live_watchers_tree_and_metrics(vllm):
    vllm.publish(0)
    rec = Recorder(vllm.endpoints).start()
    try:
        rec.wait_for(lambda s: s.status == "connected" and s.last_seq == 0, timeout=20)
        for i in range(1, len(FRAMES)):
            vllm.publish(i)
        live = rec.wait_for(lambda s: s.last_seq == len(FRAMES) - 1, timeout=20)
    finally:
        rec.stop()
    assert sum("frames" in item for item in rec.items) == len(FRAMES)  # each message once
    data = {"format": FORMAT, "vllm_version": RECORDED["vllm_version"], "recorded": "2026-12-01T09:30:00Z",
            "model": "kvviz", "block_size": RECORDED["block_size"], "num_blocks": RECORDED["num_blocks"],
            "max_new_tokens": RECORDED["max_new_tokens"], "exchanges": [], "items": rec.items}
    played = play(parse(data)).last
    assert played.tree == live.tree == fixture_tree() and played.metrics == live.metrics
