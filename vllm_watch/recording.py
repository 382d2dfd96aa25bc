"""A recorded vLLM session, as a file: what the watcher read, in order, so that it can be played
through the watcher's own code (playback.py) with no server. A recorder (recorder.py) keeps every
KV-event message exactly as it arrived (three frames, hex) and every /metrics scrape (the lines
the watcher reads), with their times; whoever sends the requests adds vLLM's answers (node 04's
`make vllm-recording`: kvviz/nodes/vllm/record.py). `parse` checks a loaded file, and says what
is wrong in words.

    {"format": 1, "vllm_version": "0.32.0", "recorded": "2026-12-01T09:30:00Z", "model": "kvviz",
     "block_size": 32, "num_blocks": 64, "max_new_tokens": 64,
     "exchanges": [{"question": ..., "group": 0, "token_ids": [...], "text": ..., "cached_tokens": 0}, ...],
     "items": [{"t": 1796..., "frames": [topic, seq, payload]},      # a KV-event message
               {"t": 1796..., "metrics": "# HELP ..."},              # a scrape
               {"t": 1796..., "metrics": null}, ...]}                # a scrape, same as the last
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

FORMAT = 1
_T = TypeVar("_T")


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


def _need(d: Any, key: str, kind: type[_T], where: str) -> _T:
    if not isinstance(d, dict) or key not in d:
        raise RecordingError(f"{where}: no {key!r}")
    v = d[key]
    number = kind is float and isinstance(v, int)  # (JSON's 2 is a float here too)
    if not (isinstance(v, kind) or number) or isinstance(v, bool):
        raise RecordingError(f"{where}: {key!r} should be {kind.__name__}, not {type(v).__name__}")
    return v  # type: ignore[no-any-return]  # (checked just above)


def _exchanges(data: dict[str, Any], where: str) -> tuple[RecordedExchange, ...]:
    exchanges = []
    for i, e in enumerate(_need(data, "exchanges", list, where)):
        w = f"{where}, exchange {i}"
        ids = _need(e, "token_ids", list, w)
        cached, group = e.get("cached_tokens"), e.get("group", i)
        integers = all(isinstance(t, int) for t in [*ids, group])
        if not integers or not (cached is None or isinstance(cached, int)):
            raise RecordingError(f"{w}: token ids, cached_tokens and group must be integers")
        exchanges.append(RecordedExchange(_need(e, "question", str, w), tuple(ids), _need(e, "text", str, w),
                                          cached, group))
    return tuple(exchanges)


def _frames(it: dict[str, Any], w: str) -> tuple[bytes, ...]:
    hexes = _need(it, "frames", list, w)
    try:
        frames = tuple(bytes.fromhex(f) for f in hexes)
    except (TypeError, ValueError):
        raise RecordingError(f"{w}: frames must be hex strings") from None
    if len(frames) != 3 or len(frames[1]) != 8:
        raise RecordingError(f"{w}: a KV-event message has 3 frames, the second 8 bytes")
    return frames


def _items(data: dict[str, Any], where: str) -> tuple[Item, ...]:
    items: list[Item] = []
    last_t: float | None = None
    last_seq: int | None = None
    scraped = False
    for i, it in enumerate(_need(data, "items", list, where)):
        w = f"{where}, item {i}"
        t = float(_need(it, "t", float, w))
        if last_t is not None and t < last_t:
            raise RecordingError(f"{w}: time goes backwards")
        last_t = t
        if "frames" in it:
            frames = _frames(it, w)
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
    return tuple(items)


def parse(data: Any, where: str = "the recording") -> Recording:
    """A recording's JSON (already loaded) -> Recording; RecordingError says what is wrong."""
    if not isinstance(data, dict):
        raise RecordingError(f"{where}: not a JSON object")
    if data.get("format") != FORMAT:
        raise RecordingError(f"{where}: format {data.get('format')!r}, this watcher plays format {FORMAT}")
    exchanges, items = _exchanges(data, where), _items(data, where)
    return Recording(_need(data, "vllm_version", str, where), _need(data, "recorded", str, where),
                     _need(data, "model", str, where), _need(data, "block_size", int, where),
                     _need(data, "num_blocks", int, where), _need(data, "max_new_tokens", int, where),
                     exchanges, items)


def load(path: Path | str) -> Recording:
    """A recording file, parsed; RecordingError when it is missing, not JSON or not a recording."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        why = f"no recording at {path}: {e.strerror} (make vllm-recording makes one)"
        raise RecordingError(why) from None
    except ValueError as e:
        raise RecordingError(f"{path} is not JSON: {e}") from None
    return parse(data, str(path))
