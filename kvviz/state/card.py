"""A metric card's row in a node's table: its label, the text it reads off a snapshot and what it
counts. A node's registry entry lists its headline cards (`Node.cards`); the card figure
(kvviz/figures/metric_card.py) draws one; the hand-in and the benchmarks read their values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine import Metrics


@dataclass(frozen=True)
class Card:
    """One row of a node's metric-card table: what the view shows, the tests check and the
    benchmarks look for (docs/architecture.md, "Metrics")."""

    label: str
    value: Callable[[Metrics], str]  # the value text, from kvviz.formatting
    counts: str  # one line saying what the value counts (also the hover text)
    of: str = "snapshot"  # the state parameter holding the snapshot it reads
    # `value` reads the whole Snapshot (its requests), not only its Metrics. Such a card is shown
    # but not listed in a node's registry `cards`, whose values read Metrics (tests, benchmarks).
    whole: bool = False
