"""A stand-in for vLLM (no vLLM needed): an HTTP server answering /metrics and /v1/models with what
a real vLLM answered, a ZeroMQ publisher and replay socket sending the KV-event messages it sent
(tests/fixtures/vllm/frames.json). Started again on the same port and sockets (`port=`), it is a
server that went and came back, with an empty cache, as a restarted vLLM is."""

from __future__ import annotations

import http.server
import json
import re
import threading
from pathlib import Path

import zmq

from vllm_watch.snapshot import Endpoints

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "vllm" / "frames.json").read_text())
FRAMES = [[bytes.fromhex(f) for f in msg] for msg in RECORDED["frames"]]
END = [b"", (-1).to_bytes(8, "big", signed=True), b""]  # (the replay socket's "no more")


class StandIn:
    """vLLM's three endpoints, answering from the fixture; `publish(i)` sends message i."""

    def __init__(self, where: Path, port: int = 0, started: float | None = None):
        """Sockets in the folder `where`, HTTP on `port` (0: a free one); `started`: the process
        start time its metrics say (a restarted server's differs), else the fixture's."""
        self.ctx = zmq.Context()
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.bind(f"ipc://{where}/events")
        self.sent: list[list[bytes]] = []
        self._stop = threading.Event()
        self._replay = threading.Thread(target=self._serve_replay, args=(f"ipc://{where}/replay",),
                                        daemon=True)
        self._replay.start()
        text = RECORDED["metrics"]
        if started is not None:
            text = re.sub(r"(?m)^process_start_time_seconds .*$", f"process_start_time_seconds {started}",
                          text)
        metrics, models = text.encode(), json.dumps({"data": [{"id": "kvviz"}]}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                body = {"/metrics": metrics, "/v1/models": models}.get(self.path)
                self.send_response(200 if body else 404)
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *_args):
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self._serving = True
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

    @property
    def port(self) -> int:
        return int(self.http.server_address[1])

    def stop_http(self) -> None:
        if self._serving:
            self._serving = False
            self.http.shutdown()
            self.http.server_close()

    def close(self) -> None:
        self.stop_http()
        self._stop.set()
        self._replay.join(timeout=5)
        self.pub.close(linger=0)
        self.ctx.term()
