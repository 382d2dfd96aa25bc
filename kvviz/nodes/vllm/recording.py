"""A recorded vLLM session, played through the live watcher's own code: node 04 without a server.

`make vllm-recording` (kvviz/nodes/vllm/record.py) runs a real vLLM with kvviz's model, sends it
node 03's four questions and two more, and keeps every KV-event message exactly as it arrived
(three frames, hex) and every /metrics scrape (the lines the watcher reads), with their times,
plus vLLM's answers. `Playback` feeds them, in order, to `Monitor`'s own `_on_frames` and
`_scrape` (only the sockets and the clock are replaced), so each step's `VllmSnapshot` is what
the live watcher computed from the same messages: the same tree, the same metrics.

    {"format": 1, "vllm_version": "0.32.0", "recorded": "2026-12-01T09:30:00Z", "model": "kvviz",
     "block_size": 32, "num_blocks": 64, "max_new_tokens": 64,
     "exchanges": [{"question": ..., "group": 0, "token_ids": [...], "text": ..., "cached_tokens": 0}, ...],
     "items": [{"t": 1796..., "frames": [topic, seq, payload]},      # a KV-event message
               {"t": 1796..., "metrics": "# HELP ..."},              # a scrape
               {"t": 1796..., "metrics": null}, ...]}                # a scrape, same as the last
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json
import threading
from dataclasses import dataclass
from pathlib import Path

from kvviz.nodes.vllm.client import VllmMetrics, parse_metrics
from kvviz.nodes.vllm.monitor import Endpoints, Monitor, VllmSnapshot
from kvviz.nodes.vllm.wire import EventBatch

ROOT = Path(__file__).resolve().parents[3]
PATH = ROOT / "assets" / "vllm-recording.json"
FORMAT = 1
RECORDED_AT = Endpoints("(a recording)", "(a recording)", "(a recording)")


class RecordingError(ValueError):
    """A recording that cannot be played, with the reason in words."""


@dataclass(frozen=True)
class RecordedExchange:
    question: str
    token_ids: tuple[int, ...]
    text: str
    cached_tokens: int | None
    group: int  # requests of one group were sent together


@dataclass(frozen=True)
class Item:
    t: float
    frames: tuple[bytes, ...] | None = None  # a KV-event message, or
    metrics: str | None = None  # a scrape's text (None with no frames: the same as the last one)


@dataclass(frozen=True)
class Recording:
    vllm_version: str
    recorded: str  # ISO 8601, UTC
    model: str
    block_size: int
    num_blocks: int
    max_new_tokens: int
    exchanges: tuple[RecordedExchange, ...]
    items: tuple[Item, ...]

    @property
    def day(self) -> str:
        return self.recorded[:10]

    @property
    def duration(self) -> float:
        return self.items[-1].t - self.items[0].t if self.items else 0.0


def _need(d: dict, key: str, kind, where: str):
    if not isinstance(d, dict) or key not in d:
        raise RecordingError(f"{where}: no {key!r}")
    v = d[key]
    if not isinstance(v, kind) or isinstance(v, bool):
        raise RecordingError(f"{where}: {key!r} should be {getattr(kind, '__name__', kind)}, not {type(v).__name__}")
    return v


def parse(data: dict, where: str = "the recording") -> Recording:
    """A recording's JSON (already loaded) -> Recording; RecordingError says what is wrong."""
    if not isinstance(data, dict):
        raise RecordingError(f"{where}: not a JSON object")
    if data.get("format") != FORMAT:
        raise RecordingError(f"{where}: format {data.get('format')!r}, this kvviz plays format {FORMAT}")
    exchanges = []
    for i, e in enumerate(_need(data, "exchanges", list, where)):
        w = f"{where}, exchange {i}"
        ids = _need(e, "token_ids", list, w)
        cached, group = e.get("cached_tokens"), e.get("group", i)
        if not all(isinstance(t, int) for t in [*ids, group]) or not (cached is None or isinstance(cached, int)):
            raise RecordingError(f"{w}: token ids, cached_tokens and group must be integers")
        exchanges.append(RecordedExchange(_need(e, "question", str, w), tuple(ids), _need(e, "text", str, w), cached,
                                          group))
    items, last_t, last_seq, scraped = [], None, None, False
    for i, it in enumerate(_need(data, "items", list, where)):
        w = f"{where}, item {i}"
        t = float(_need(it, "t", (int, float), w))
        if last_t is not None and t < last_t:
            raise RecordingError(f"{w}: time goes backwards")
        last_t = t
        if "frames" in it:
            hexes = _need(it, "frames", list, w)
            try:
                frames = tuple(bytes.fromhex(f) for f in hexes)
            except (TypeError, ValueError):
                raise RecordingError(f"{w}: frames must be hex strings") from None
            if len(frames) != 3 or len(frames[1]) != 8:
                raise RecordingError(f"{w}: a KV-event message has 3 frames, the second 8 bytes")
            seq = int.from_bytes(frames[1], "big", signed=True)
            if last_seq is not None and seq <= last_seq:
                raise RecordingError(f"{w}: event batch {seq} after batch {last_seq}")
            last_seq = seq
            items.append(Item(t, frames=frames))
        elif "metrics" in it:
            text = it["metrics"]
            if text is None and not scraped:
                raise RecordingError(f"{w}: 'same metrics as the last scrape', but there is none before it")
            if text is not None and not isinstance(text, str):
                raise RecordingError(f"{w}: metrics should be text or null")
            scraped = True
            items.append(Item(t, metrics=text))
        else:
            raise RecordingError(f"{w}: neither 'frames' nor 'metrics'")
    if not scraped:
        raise RecordingError(f"{where}: no /metrics scrape")
    return Recording(_need(data, "vllm_version", str, where), _need(data, "recorded", str, where),
                     _need(data, "model", str, where), _need(data, "block_size", int, where),
                     _need(data, "num_blocks", int, where), _need(data, "max_new_tokens", int, where),
                     tuple(exchanges), tuple(items))


def load(path: Path = PATH) -> Recording:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise RecordingError(f"no recording at {path}: {e.strerror} (make vllm-recording makes one)") from None
    except ValueError as e:
        raise RecordingError(f"{path} is not JSON: {e}") from None
    return parse(data, str(path))


class Playback(Monitor):
    """The live watcher, fed from a recording: no thread, no sockets; `steps()` plays it all."""

    def __init__(self, recording: Recording):
        self.recording = recording
        self._t = recording.items[0].t if recording.items else 0.0
        self._m: VllmMetrics | None = None
        self._text: str | None = None
        super().__init__(RECORDED_AT)

    def _now(self) -> float:
        return self._t

    def _fetch_metrics(self) -> VllmMetrics:
        return self._m

    def _fetch_model(self) -> str:
        return self.recording.model

    def _replay(self, start: int) -> list[EventBatch]:
        return []  # (every message is in the recording, in order)

    def start(self) -> Monitor:
        raise RuntimeError("a recording is played with steps(), not watched")

    def steps(self) -> tuple[tuple[float, VllmSnapshot], ...]:
        """(seconds into the recording, the watcher's snapshot) after each recorded message or
        scrape that changed it."""
        out, start = [], self.recording.items[0].t if self.recording.items else 0.0
        for item in self.recording.items:
            self._t = item.t
            if item.frames is not None:
                changed = self._on_frames(list(item.frames))
            else:
                if item.metrics is not None:
                    try:
                        self._m = parse_metrics(item.metrics)
                    except ValueError as e:
                        raise RecordingError(f"a recorded scrape at t={item.t} does not parse: {e}") from None
                changed = self._scrape()
            if changed:
                self._publish()
                out.append((item.t - start, dataclasses.replace(self.latest(), status="recording")))
        if not out:
            raise RecordingError("the recording changes nothing")
        return tuple(out)


@dataclass(frozen=True)
class Played:
    """A recording and the watcher's snapshots through it (shared by every session: immutable)."""

    recording: Recording
    steps: tuple[tuple[float, VllmSnapshot], ...]

    @property
    def last(self) -> VllmSnapshot:
        return self.steps[-1][1]

    def at(self, seconds: float) -> VllmSnapshot:
        """The snapshot `seconds` into the recording (the first one before it, the last one after)."""
        i = bisect.bisect_right([t for t, _ in self.steps], seconds)
        return self.steps[max(0, i - 1)][1]


def play(recording: Recording) -> Played:
    return Played(recording, Playback(recording).steps())


_LOCK = threading.Lock()


@functools.cache
def _shipped() -> Played | RecordingError:
    try:
        return play(load(PATH))
    except RecordingError as e:
        return e


def shipped() -> Played | RecordingError:
    """The recording in assets/, played once per process (or why it cannot be)."""
    with _LOCK:
        return _shipped()
