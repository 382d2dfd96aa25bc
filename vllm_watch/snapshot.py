"""What the watcher publishes: where the server is (`Endpoints`), one point of its metrics'
history (`Sample`), and everything known at one moment (`VllmSnapshot`). All immutable, so any
number of readers share one snapshot without a lock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from vllm_watch import defaults
from vllm_watch.cache_tree import TreeView
from vllm_watch.metrics import VllmMetrics


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


@dataclass(frozen=True)
class Endpoints:
    """The server's HTTP base URL, its KV-event publisher and its replay socket (default:
    $KVVIZ_VLLM_URL, $KVVIZ_VLLM_EVENTS, $KVVIZ_VLLM_REPLAY, else `make vllm`'s)."""

    url: str = field(default_factory=lambda: _env("KVVIZ_VLLM_URL", defaults.DEFAULT_URL).rstrip("/"))
    events: str = field(default_factory=lambda: _env("KVVIZ_VLLM_EVENTS", defaults.DEFAULT_EVENTS))
    replay: str = field(default_factory=lambda: _env("KVVIZ_VLLM_REPLAY", defaults.DEFAULT_REPLAY))


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the epoch
    kv_usage: float
    hit_rate: float
    running: float
    waiting: float
    preemptions: float


@dataclass(frozen=True)
class VllmSnapshot:
    """What the watcher knows at one moment (immutable)."""

    version: int
    status: str  # "waiting" (never answered yet), "connected", "disconnected" ("recording": played)
    endpoints: Endpoints
    model: str | None
    metrics: VllmMetrics | None
    tree: TreeView
    history: tuple[Sample, ...]
    last_seq: int | None
    since: float  # when the status last changed
    restarts: int  # servers seen to restart (their cache started again empty)
