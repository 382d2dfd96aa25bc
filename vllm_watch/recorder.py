"""The live watcher, keeping what it reads, for a recording (recording.py): each KV-event message
once (as it arrived, from the subscription or the replay socket) and each scrape (the lines it
reads; null when the same as the last one), with the time. It scrapes ten times a second: vLLM
answers a request on a CPU within a second, and a scrape a second would rarely see one running.
"""

from __future__ import annotations

from typing import Any

from vllm_watch.client import metrics_text
from vllm_watch.metrics import VllmMetrics, parse_metrics, series_read
from vllm_watch.monitor import Monitor
from vllm_watch.snapshot import Endpoints


class Recorder(Monitor):
    """`items` is the recording's "items" list (recording.py), growing as the watcher reads."""

    scrape_s = 0.1

    def __init__(self, endpoints: Endpoints) -> None:
        self.items: list[dict[str, Any]] = []
        self._seqs: set[int] = set()
        self._last_text: str | None = None
        super().__init__(endpoints)

    def _received(self, frames: list[bytes]) -> None:
        if len(frames) != 3 or len(frames[1]) != 8:
            return
        seq = int.from_bytes(frames[1], "big", signed=True)
        if seq < 0 or seq in self._seqs:
            return
        self._seqs.add(seq)
        self.items.append({"t": round(self._now(), 3), "frames": [f.hex() for f in frames]})

    def _fetch_metrics(self) -> VllmMetrics:
        t = round(self._now(), 3)
        text = series_read(metrics_text(self.endpoints.url))
        self.items.append({"t": t, "metrics": None if text == self._last_text else text})
        self._last_text = text
        return parse_metrics(text)
