"""The event log: every block and request transition, with a reason a person can read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, get_args

EventKind = Literal[
    "request_added",
    "request_admitted",
    "request_refused",
    "request_preempted",
    "request_finished",
    "request_released",
    "block_allocated",
    "block_freed",
    "block_shared",
    "block_evicted",
]
EVENT_KINDS: tuple[EventKind, ...] = get_args(EventKind)


@dataclass(frozen=True)
class Event:
    step: int
    kind: EventKind
    request_id: int | None
    blocks: tuple[int, ...]
    reason: str

    def __deepcopy__(self, memo: dict[int, Any]) -> Event:
        return self  # (frozen, of immutable values: an engine's clone shares its log's events)


class EventLog:
    """Append-only since the last reset; `step` is the engine step the event happened in."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.step = 0

    def emit(self, kind: EventKind, request_id: int | None = None, blocks: Iterable[int] = (),
             reason: str = "") -> None:
        assert kind in EVENT_KINDS, kind
        self.events.append(Event(self.step, kind, request_id, tuple(blocks), reason))

    def clear(self) -> None:
        self.events.clear()
        self.step = 0
