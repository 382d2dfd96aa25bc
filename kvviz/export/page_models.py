"""What a recorded page and a live answer share about a node's models (kvviz/export/site.py
builds the pages with them; kvviz/export/live.py, which serves, reads them without importing the
site writer): the node's column, its models in a fixed order, Panel's settings while building,
and the file naming each node's recorded properties."""

from __future__ import annotations

from urllib.parse import urlencode

import panel as pn
from bokeh.model import Model
from bokeh.model.util import collect_filtered_models
from bokeh.models import CustomJS

from kvviz.lesson import Lesson
from kvviz.nodes import BY_KEY
from kvviz.nodes.recipe import TRANSPORT

FRAMES_FILE = "frames.json"  # each node's recorded properties, for live.py
TRANSPORT_ACTIONS = {c.action for c in TRANSPORT}


def node_column(lesson: Lesson, key: str) -> pn.Column:
    """A node's view as every recorded page holds it (and kvviz/export/live.py's frames)."""
    return pn.Column(lesson.view(key), sizing_mode="stretch_width", css_classes=[f"kv-recorded-{key}"], margin=0)


def model_order(model: Model) -> list[Model]:
    """The models of a node's view (its column's `model`) in a fixed order: the same in every page
    that holds the node and in a live process that builds it again (the player's callbacks left
    out), so a model is named across processes by its place in this list."""
    return collect_filtered_models(lambda m: isinstance(m, CustomJS), model)


def page_config():
    """Panel's settings while a recorded page is built (and a live frame's view: the same models):
    the stylesheet linked beside the pages."""
    return pn.config.set(css_files=["kvviz.css"], raw_css=[])


def state_link(key: str):
    """A node state's query in the live lesson (its URL module), for a recording's links."""
    url = BY_KEY[key].url
    return (lambda state: urlencode(url.query(state))) if url is not None else (lambda _state: "")
