"""What a recorded page and a live answer share (kvviz/export/site.py builds the pages with it;
kvviz/serve/live.py, which serves, reads it without importing the site writer): a node's column,
its models in a fixed order, Panel's settings while building, the file naming each node's
recorded properties, a state's link, and Explain it back's facts and self-checks about a node."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import urlencode

import panel as pn
from bokeh.document import Document
from bokeh.model import Model
from bokeh.model.util import collect_filtered_models
from bokeh.models import CustomJS
from panel.io.state import set_curdoc

from kvviz.lesson import Lesson
from kvviz.nodes import BY_KEY
from kvviz.nodes.explain.checks import CHECKS
from kvviz.nodes.explain.state import FACT_NODE, ExplainState, withheld
from kvviz.nodes.recipe import TRANSPORT

FRAMES_FILE = "frames.json"  # each node's recorded properties, for kvviz/serve/live.py
TRANSPORT_ACTIONS = {c.action for c in TRANSPORT}


def node_column(lesson: Lesson, key: str) -> pn.Column:
    """A node's view as every recorded page holds it (and kvviz/serve/live.py's frames)."""
    return pn.Column(lesson.view(key), sizing_mode="stretch_width", css_classes=[f"kv-recorded-{key}"],
                     margin=0)


def has(model: Model, name: str) -> bool:
    """Whether `model` has the property `name`. (Asking Bokeh for one it lacks, as `getattr(model,
    name, None)` does, first searches every property's name for a "did you mean": tenths of a
    millisecond each, some seconds of a page's writing.)"""
    return model.lookup(name, raises=False) is not None


def classes(model: Model) -> list[str]:
    """A model's CSS classes ([] for a model that has none)."""
    return list(model.css_classes or []) if has(model, "css_classes") else []  # type: ignore[attr-defined]


def model_order(model: Model) -> list[Model]:
    """The models of a node's view (its column's `model`) in a fixed order: the same in every page
    that holds the node and in a live process that builds it again (the player's callbacks left
    out), so a model is named across processes by its place in this list."""
    return collect_filtered_models(lambda m: isinstance(m, CustomJS), model)


def no_session() -> AbstractContextManager[Any]:
    """As the current document, one with no session, whatever the caller's is (a served process's
    answers, a walk in a test process). A view redraws its figures at once only outside a served
    session (kvviz/web/redraw.py); under a session's document they would wait for its next tick, a
    walk would see them change a state late, and the session's stylesheets would be taken."""
    return set_curdoc(Document())


@contextmanager
def page_config() -> Iterator[None]:
    """Panel's settings while a recorded page is built, a node walked or a live frame drawn (the
    same models): the stylesheet linked beside the pages, under `no_session()`."""
    with no_session(), pn.config.set(css_files=["kvviz.css"], raw_css=[]):  # (this order: under a
        yield  # session's document, Panel's settings would be that session's own)


def state_link(key: str) -> Callable[[Any], str]:
    """A node state's query in the live lesson (its URL module), for a recording's links."""
    url = BY_KEY[key].url
    if url is None:
        return lambda _state: ""
    return lambda state: urlencode(url.query(state))


def facts_of(explain: ExplainState, node: str) -> dict[str, list[str]]:
    """Node `node`'s facts as Explain it back states them now: key -> [the fact, the fact withheld]
    (a recorded page's, per recorded run: kvviz/export/checks.py; a live answer's)."""
    return {k: [t, withheld(t)] for k, t in explain.fact_map().items() if FACT_NODE[k] == node}


def asked_of(explain: ExplainState, node: str) -> dict[str, dict[str, Any]]:
    """The self-checks about node `node`, as it is now: key -> its question and the engine's answer."""
    return {c.key: {"question": explain.question(c.key), "answer": explain.engine_answer(c.key)}
            for c in CHECKS if c.node == node}
