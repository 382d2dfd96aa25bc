"""The watcher's thread against a stand-in for vLLM (no vLLM needed): an HTTP server answering
/metrics and /v1/models with what a real vLLM answered, a ZeroMQ publisher and replay socket
sending the KV-event messages it sent (tests/fixtures/vllm). The watcher connects, gets what was
published before it joined from the replay socket and the rest as published, and builds the tree
those messages build; a server that stops answering is reported disconnected; a recorder's items
are a recording that plays back to the live watcher's tree and metrics."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest
import zmq

from vllm_watch.cache_tree import CacheTree
from vllm_watch.metrics import parse_metrics
from vllm_watch.monitor import Monitor
from vllm_watch.playback import play
from vllm_watch.recorder import Recorder
from vllm_watch.recording import FORMAT, parse
from vllm_watch.snapshot import Endpoints
from vllm_watch.wire import decode_frames

RECORDED = json.loads((Path(__file__).parents[1] / "fixtures" / "vllm" / "frames.json").read_text())
FRAMES = [[bytes.fromhex(f) for f in msg] for msg in RECORDED["frames"]]
END = [b"", (-1).to_bytes(8, "big", signed=True), b""]  # (the replay socket's "no more")


class StandIn:
    """vLLM's three endpoints, answering from the fixture; `publish(i)` sends message i."""

    def __init__(self, where: Path):
        self.ctx = zmq.Context()
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.bind(f"ipc://{where}/events")
        self.sent: list[list[bytes]] = []
        self._stop = threading.Event()
        self._replay = threading.Thread(target=self._serve_replay, args=(f"ipc://{where}/replay",),
                                        daemon=True)
        self._replay.start()
        metrics, models = RECORDED["metrics"].encode(), json.dumps({"data": [{"id": "kvviz"}]}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                body = {"/metrics": metrics, "/v1/models": models}.get(self.path)
                self.send_response(200 if body else 404)
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *_args):
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.endpoints = Endpoints(f"http://127.0.0.1:{self.http.server_address[1]}", f"ipc://{where}/events",
                                   f"ipc://{where}/replay")

    def publish(self, i: int) -> None:
        self.sent.append(FRAMES[i])
        self.pub.send_multipart(FRAMES[i])

    def _serve_replay(self, endpoint: str) -> None:
        router = self.ctx.socket(zmq.ROUTER)
        router.bind(endpoint)
        while not self._stop.is_set():
            if router.poll(50):
                who, _, start = router.recv_multipart()
                first = int.from_bytes(start, "big")
                for frames in list(self.sent):
                    if int.from_bytes(frames[1], "big") >= first:
                        router.send_multipart([who, b"", *frames])
                router.send_multipart([who, b"", *END])
        router.close(linger=0)

    def stop_http(self) -> None:
        self.http.shutdown()
        self.http.server_close()

    def close(self) -> None:
        self._stop.set()
        self._replay.join(timeout=5)
        self.pub.close(linger=0)
        self.ctx.term()


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
