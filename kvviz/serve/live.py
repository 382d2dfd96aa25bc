"""What no recording holds, computed on request and played by the page like a recording.

    GET /lesson-live?node=radix&sharing=1&op=ask:What%20is%20a%20page%3F[&act=<control id>&value=<v>]
                    [&from=<step>][&extra=<place>.<property>]...

A played page (kvviz/export/player_live.js) sends a node's link here when a student does something
no recording holds: types a prompt or a question, presses Release oldest or Fill the pool, opens
a link to a state that was not recorded, or acts on a state that came from here. This process's
engine puts the node where the link says (the restore path that links use), applies the action
to the node's own widget (`act`, by its id: as a click in the live lesson would), runs it to
its end and records that one branch, from its settled end back to its start, with the same
figures and the same code as the recording (kvviz/export/record.py). The answer is the branch:
one more set of states for the page's player, which then plays it with Step, Play and Rewind
like any other, with nothing more sent. An action taken at the end of a state the page holds
(a typed question, a button) leaves the steps before it as they were: `from` says where the
page's own states end, and only the steps from there on are recorded.

A model is named by its place in the node's `model_order` (the same in the page and here), and
the properties read are the page's recorded ones (`frames.json` beside the pages) plus any
other the page already holds from an earlier answer (`extra`) or that this branch changes.

One `Frames` per node and process, built on first use or when the recording is ready (a second
or two), answers one request at a time on the server's event loop; a few answers are kept (the
same question from several students is computed once).
Every input is a link's: parsed by the node's own `url` module, capped, never executed.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import msgspec
import numpy as np
import panel as pn
from bokeh.core.property.validation import validate
from bokeh.document import Document
from bokeh.model import Model

from kvviz import urlstate
from kvviz.export.page_models import (
    FRAMES_FILE,
    TRANSPORT_ACTIONS,
    asked_of,
    classes,
    facts_of,
    model_order,
    no_session,
    node_column,
    page_config,
)
from kvviz.export.record import Reader, Rows, Values
from kvviz.lesson import Lesson
from kvviz.nodes import BY_KEY
from kvviz.nodes.explain.checks import CHECKS
from kvviz.nodes.recipe import Recipe, start_branch
from kvviz.timeline import eager_snapshots
from kvviz.web.redraw import held

MAX_QUERY = 6000  # characters of a request's query: a link of 24 capped prompts fits
MAX_EXTRA = 200  # properties the page may ask to be read besides the recorded ones
EXTRA_RE = re.compile(r"^(\d{1,5})\.([a-z_]{1,40})$")
KEPT = 48  # answers kept per process


class FrameError(ValueError):
    """A request this node cannot answer: the sentence says why (shown to the student)."""


class Frames:
    """One node's view in this process, driven by its real state, read off as a branch."""

    def __init__(self, key: str, recipe: Recipe, props: list[list[Any]], lesson: Lesson, doc: Document):
        """`lesson` and `doc`: this process's, shared by its nodes' frames (Panel shares some
        models, stylesheets, between the views it builds: they must be in one document)."""
        self.key, self.recipe = key, recipe
        self.lesson, self.doc = lesson, doc
        self.state = self.lesson.states[key]
        with page_config():  # (as the page was built: the same models, in the same order)
            column = node_column(self.lesson, key)
            layout = pn.Column(column, sizing_mode="stretch_width", css_classes=["kv-embed"], margin=(8, 14))
            self.doc.add_root(layout.get_root(self.doc))
        self.models = model_order(self._column_model(column))
        self.place: dict[str, int] = {m.id: i for i, m in enumerate(self.models)}
        self.props = [(int(i), str(a)) for i, a in props]  # the page's recorded ones, in its order
        # every property of the node's models as it is now (kept current: each change is an event)
        self.reader = Reader(self.doc, self.models)
        # (the node's own widgets a request may act on, by id: the class `kv-<id>` the view gives each)
        allowed = {c.id for c in recipe.controls if c.action not in TRANSPORT_ACTIONS} | set(recipe.live_only)
        self.actions = {c[3:]: w for w in column.select(pn.widgets.Widget) for c in (w.css_classes or [])
                        if c.startswith("kv-") and c[3:] in allowed}

    def _column_model(self, column: pn.Column) -> Model:
        found = [m for m in self.doc.models
                 if f"kv-recorded-{self.key}" in classes(m)]
        if len(found) != 1:
            raise LookupError(f"{len(found)} views of node {self.key} in its live document")
        return found[0]

    def _act(self, control: str, value: str | None) -> None:
        widget = self.actions.get(control)
        if widget is None:
            raise FrameError(f"{control!r} is not something node {BY_KEY[self.key].number} can do here.")
        label = widget.name
        if isinstance(widget, pn.widgets.Button):
            widget.clicks += 1
        elif isinstance(widget, pn.widgets.Checkbox):
            widget.value = value in ("1", "true")
        elif isinstance(widget, pn.widgets.Select):
            options = widget.options if isinstance(widget.options, list) else list(widget.options.values())
            if value not in [str(o) for o in options]:
                raise FrameError(f"{label} has no choice {str(value)[:20]!r}.")
            widget.value = next(o for o in options if str(o) == value)
        elif hasattr(widget, "start") and hasattr(widget, "end"):  # a slider
            n = int(value) if value is not None and re.fullmatch(r"\d{1,4}", value) else None
            if n is None or not widget.start <= n <= widget.end:
                raise FrameError(f"{label} takes a whole number from {widget.start} to {widget.end}.")
            widget.value = n
        else:
            raise FrameError(f"{label!r} cannot be used from a recording.")
        if self.state.playing:  # (an added request plays in the live lesson: here it runs to its end)
            self.state.settle()

    def branch(self, query: str, act: str | None = None, value: str | None = None,
               extra: Sequence[tuple[int, str]] = (), start: int = 0,
               to: int | None = None) -> dict[str, Any]:
        """The branch the link `query` (plus `act` with `value`) leads to: every state from its
        settled end back to engine step `start` (the page holds those before: the action came
        after them), as rows of value indices over the page's properties then `props` (the
        others read), with the live lesson's link for its end. (One at a time per process: the
        caller holds the lock.) `to`: the action is taken at that engine step of the link's run
        (stepped back to it first), as the live lesson takes it where the student stepped back to."""
        return self._branch(query, act, value, list(extra), start, to)

    def _branch(self, query: str, act: str | None, value: str | None, extra: list[tuple[int, str]],
                start: int, to: int | None = None) -> dict[str, Any]:
        parsed = urlstate.parse(_multi(query))
        notices = list(parsed.notices)
        url = BY_KEY[self.key].url
        state = self.state
        self.reader.read()  # (whatever the last request left, so that `now` is current)
        # (each state's snapshot kept on the way: stepping back reads them; figures drawn once, at the end)
        with eager_snapshots(), held():
            _restore(state, self.key, parsed.links.get(self.key), notices)
            while to is not None and state.step_count > to and state.step_back():
                pass  # (the action is taken at that step of the run, as the live lesson takes it)
            if act:
                self._act(act, value)
        wanted = [(self.models[i].id, a) for i, a in self.props]
        now = self.reader.now
        others = [p for p in ((self.models[i].id, a) for i, a in extra if i < len(self.models)) if p in now]
        stored = Values()
        # (the page's recorded properties, those it holds from earlier answers, then any this branch changes)
        rows = Rows(self.reader, stored, wanted + [p for p in others if p not in set(wanted)])
        link = urlencode(url.query(state)) if url is not None else ""
        facts = facts_of(self.lesson.states["explain"], self.key)  # (Explain it back's, at its end)
        rows.walk_back(state, start)  # (the same reading as a recording's: kvviz/export/record.py)
        n = len(wanted)
        return {"node": self.key, "n": n, "from": min(start, rows.steps[-1]),
                "props": [[self.place[mid], attr] for mid, attr in rows.order[n:]],
                "values": stored.values, "rows": rows.rows[::-1], "steps": rows.steps[::-1],
                "link": link, "notices": notices, "facts": facts}

    def check(self, query: str, key: str) -> dict[str, Any]:
        """Explain it back's self-check `key` about this node at the link `query`'s state (a run
        the student made, which no recording holds): its question, the engine's answer, and the
        node's facts. (One at a time per process: the caller holds the lock.)"""
        found = next((c for c in CHECKS if c.key == key and c.node == self.key), None)
        if found is None:
            raise FrameError("There is no such self-check about this node.")
        parsed = urlstate.parse(_multi(query))
        with held():  # (the figures drawn once, from the state restored)
            _restore(self.state, self.key, parsed.links.get(self.key), [])
        explain = self.lesson.states["explain"]
        return {"node": self.key, "asked": asked_of(explain, self.key), "facts": facts_of(explain, self.key)}


def _restore(state: Any, key: str, link: Any, notices: list[str]) -> None:
    """Node `key`'s `state` put where `link` says, from its defaults: its engine built once, as the
    link has it (the url module's `start`: sharing on, say, rather than built without, then again
    with, and the checkbox flipped twice). (Every widget the set-up sets is set, even to the value
    it had: the answer lists the properties its set-up touched, which a page may hold otherwise.)"""
    url = BY_KEY[key].url
    start_branch(state, url.start(link) if url is not None else None)
    if url is not None:
        url.restore(state, link, notices)


def _multi(query: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        out.setdefault(k, []).append(v)
    return out


class Service:
    """This process's frames: one `Frames` per recorded node (built on first use), answers kept."""

    def __init__(self, folder: Path, recipes: dict[str, Recipe]):
        self.props = json.loads((folder / FRAMES_FILE).read_text(encoding="utf-8"))
        self.recipes = recipes
        self.frames: dict[str, Frames] = {}
        self.lesson: Lesson | None = None
        self.doc = Document()
        self.kept: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self.lock = threading.Lock()  # (the answers kept, the frames built)
        self.engine = threading.Lock()  # (one branch at a time: the nodes share a lesson and a document)

    def _frames(self, key: str) -> Frames:
        with self.lock:
            if key not in self.frames:
                self.lesson = self.lesson or Lesson({})
                self.frames[key] = Frames(key, self.recipes[key], self.props[key], self.lesson, self.doc)
            return self.frames[key]

    @staticmethod
    def recorded_nodes(folder: Path) -> list[str]:
        """The nodes a recording holds frames for."""
        return list(json.loads((folder / FRAMES_FILE).read_text(encoding="utf-8")))

    def warm(self, key: str | None = None) -> None:
        """Build a node's frames now (every node's without `key`): its first request then waits
        for none."""
        for k in [key] if key else list(self.props):
            if k in self.recipes:
                with no_session():
                    self._frames(k)

    def warmed(self) -> bool:
        """Whether every node's frames are built."""
        return all(k in self.frames for k in self.props if k in self.recipes)

    def answer(self, query: str) -> tuple[int, bytes]:
        """(HTTP status, gzipped JSON) for a request's query string."""
        try:
            key, link, act, value, extra, start, to = self.parse(query)
        except FrameError as e:
            return 400, gz({"ok": False, "message": str(e)})
        check = dict(parse_qsl(query)).get("check")
        cache_key = (key, link, act, value, tuple(extra), start, to, check)
        with self.lock:
            if cache_key in self.kept:
                self.kept.move_to_end(cache_key)
                return 200, self.kept[cache_key]
        try:
            # (the current document: one with no session, so that every figure redraws at once and
            # no session's document, nor its stylesheets, is taken for this one. Bokeh does not
            # validate the values the view sets meanwhile, as in a recording's walk (record.py): a
            # check only, which converts nothing, ~10% of an answer. The switch is the process's,
            # so a live session's changes on the event loop meanwhile go unchecked too; one answer
            # at a time per process sets and restores it.)
            with self.engine, no_session(), validate(False):
                frames = self._frames(key)
                answer = (frames.check(link, check[:40]) if check
                          else frames.branch(link, act, value, extra, start, to))
                body = gz({"ok": True, **answer})
        except FrameError as e:
            return 400, gz({"ok": False, "message": str(e)})
        with self.lock:
            self.kept[cache_key] = body
            while len(self.kept) > KEPT:
                self.kept.popitem(last=False)
        return 200, body

    def parse(self,
              query: str) -> tuple[str, str, str | None, str | None, list[tuple[int, str]], int, int | None]:
        if len(query) > MAX_QUERY:
            raise FrameError("That link is too long to run.")
        pairs = parse_qsl(query, keep_blank_values=True)
        one = {k: v for k, v in pairs}
        key = one.get("node", "")
        if key not in self.props or key not in self.recipes:
            raise FrameError("There is no recorded node by that name here.")
        url = BY_KEY[key].url
        params = set(url.PARAMS) if url is not None else set()
        link = urlencode([(k, v) for k, v in pairs if k in params])
        act, value = one.get("act"), one.get("value")
        to = one.get("to")
        if to is not None and not re.fullmatch(r"\d{1,5}", to):
            raise FrameError("That request names a step it should not.")
        if act is not None and len(act) > 60 or value is not None and len(value) > 60:
            raise FrameError("That action is too long.")
        extra: list[tuple[int, str]] = []
        for k, v in pairs:
            if k == "extra":
                m = EXTRA_RE.match(v)
                if m is None or len(extra) >= MAX_EXTRA:
                    raise FrameError("That request names a property it should not.")
                extra.append((int(m.group(1)), m.group(2)))
        start = one.get("from", "0")
        if not re.fullmatch(r"\d{1,5}", start):
            raise FrameError("That request names a step it should not.")
        return key, link, act or None, value, extra, int(start), None if to is None else int(to)


def gz(data: dict[str, Any]) -> bytes:
    """An answer as gzipped JSON (kept, and sent as it is to a browser that accepts gzip). (Written
    by msgspec, which the lesson has for node 04's events: an answer's ~200 kB of JSON in a
    tenth of the time `json.dumps` takes, the same JSON but for how a number is spelled. A numpy
    number, which `json.dumps` took as the float or int it subclasses, is written as its value.
    Compressed at level 1: a typed question's ~195 kB of JSON in 0.5 ms to 13 kB, where level 6
    took 1.4 ms for 8 kB: a class's own questions are computed one at a time per backend.)"""
    return gzip.compress(msgspec.json.encode(data, enc_hook=_plain), 1)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (msgspec asks only for types it lacks)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"An answer cannot hold a {type(value).__name__}.")
