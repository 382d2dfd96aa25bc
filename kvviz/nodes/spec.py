"""A lesson node's entry in the registry (kvviz/nodes/__init__.py): everything the page, the
URL code, the tests and the benchmarks need to find about one node, in one place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from kvviz.state.card import Card


@dataclass(frozen=True)
class Node:
    key: str  # in URLs (?node=paging), CSS classes (kv-node-paging) and data-node attributes
    number: str  # shown in the navigation: "01", "02", ...
    title: str  # the navigation's name for it
    state: type  # its state class (param.Parameterized, no Panel)
    view: type  # its view class (Panel), built with state= and on_interact=
    cards: tuple[Card, ...] = ()  # its headline metric cards, in the order shown
    url: ModuleType | None = None  # its URL fields: PARAMS, WATCH, parse, restore, query
    needs: tuple[str, ...] = ()  # the other nodes' states its state is built over (by key)
    live: bool = True  # runs engines (a transport, keyboard shortcuts, a play timer)
    # () -> its static-export Recipe (kvviz/nodes/recipe.py), or None: left out
    recipe: Callable | None = None
    # The whole lesson in page order, (key, number, title) per node: set by the registry
    # (kvviz/nodes/__init__.py) and handed to the view (its back and continue links, node numbers).
    outline: tuple[tuple[str, str, str], ...] = ()

    def new_state(self, states: dict):
        """A fresh state; `states` holds the states of the nodes before it, by key."""
        return self.state(**{k: states[k] for k in self.needs})

    def new_view(self, state, on_interact=None, handin=None):
        """Its view, given the lesson's outline; `handin`, the session's hand-in
        (kvviz/handin/session.py), if the view takes one."""
        extra = ({"handin": handin} if handin is not None and "handin" in getattr(self.view, "param", ())
                 else {})
        return self.view(state=state, on_interact=on_interact, outline=self.outline, **extra)
