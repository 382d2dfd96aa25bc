"""A recorded session (recording.py) played through the live watcher's own code: `Playback` feeds
each recorded KV-event message and scrape, in order, to `Monitor`'s own `_on_frames` and `_scrape`
(only the sockets and the clock are replaced), so each step's `VllmSnapshot` is what the live
watcher computed from the same messages: the same tree, the same metrics. `Played` holds them all.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass

from vllm_watch.metrics import VllmMetrics, parse_metrics
from vllm_watch.monitor import Monitor
from vllm_watch.recording import Recording, RecordingError
from vllm_watch.snapshot import Endpoints, VllmSnapshot
from vllm_watch.wire import EventBatch

RECORDED_AT = Endpoints("(a recording)", "(a recording)", "(a recording)")


class Playback(Monitor):
    """The live watcher, fed from a recording: no thread, no sockets; `steps()` plays it all."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._t = recording.items[0].t if recording.items else 0.0
        self._m: VllmMetrics | None = None
        self._text: str | None = None
        super().__init__(RECORDED_AT)

    def _now(self) -> float:
        return self._t

    def _fetch_metrics(self) -> VllmMetrics:
        if self._m is None:  # (parse refuses a recording whose first scrape is null)
            raise RecordingError("a scrape 'the same as the last one' before any")
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
        out: list[tuple[float, VllmSnapshot]] = []
        start = self.recording.items[0].t if self.recording.items else 0.0
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
    """A recording and the watcher's snapshots through it (immutable: any number of readers share it)."""

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
    """Every snapshot the watcher gives through `recording` (RecordingError when it changes nothing)."""
    return Played(recording, Playback(recording).steps())
