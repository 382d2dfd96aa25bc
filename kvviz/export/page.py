"""One page of the recorded site: a Bokeh document holding some of the lesson's nodes, and the
calls that give each node its recording (kvviz/export/site.py writes every page with it).

A page is built in two parts (`start` and `Page.finish`): everything but its nodes' recordings
first (the document, its controls wired to the player, the predictions and the self-checks),
then, once the walks are done (kvviz/export/walk.py), one `register` call per node. The site
builds its pages while the workers walk, so that only the second part waits for them.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import panel as pn
from bokeh.document import Document
from bokeh.model import Model
from bokeh.resources import Resources

from kvviz.controls.transport import said_texts
from kvviz.export import checks, libraries, walk
from kvviz.export.page_models import TRANSPORT_ACTIONS, classes, model_order, node_column
from kvviz.export.player import (
    CLASSROOM_JS,
    PLAYER_JS,
    disable,
    predictions,
    wire,
    wire_live,
    wire_predictions,
)
from kvviz.export.recipes import recipes
from kvviz.export.reuse import CHECKS_SETUP, REGISTER, Walked
from kvviz.handin.classroom import browser_config
from kvviz.lesson import NODE_PAGE_TEMPLATE, Lesson, closing, opening, page_heading
from kvviz.nodes import BY_KEY, OUTLINE
from kvviz.nodes.recipe import Recipe
from kvviz.web import stylesheet
from kvviz.web.keep_open import KeepOpen
from kvviz.web.keyboard import Keyboard
from kvviz.web.live_html import AFTER_PAINT

# The page's libraries, linked relative to it (`./static/...`, as a Bokeh server names them).
RESOURCES = Resources(mode="server", root_url="./")


# Where a page served beside the live lesson (kvviz/serve/routes.py: /lesson/...) finds it.
SERVED_LIVE = "../app"
SERVED_HANDIN = "../lesson-handin"  # (kvviz/handin/endpoint.py)
SERVED_FRAMES = "../lesson-live"  # (kvviz/serve/live.py: what no recording holds)
SERVED_REPORT, SERVED_CLASS = "../lesson-report", "../lesson-class"  # (kvviz/handin/class_endpoint.py)


# Node 04 on a served page: it watches a live vLLM, so it runs live (its link carries nothing).
NODE_04_HTML = f"""<section class="kv-live-links" aria-label="Node {html.escape(BY_KEY["vllm"].number)}">
<div class="kv-node-vllm"><h2>{html.escape(BY_KEY["vllm"].number)} · {html.escape(BY_KEY["vllm"].title)}</h2>
<p>The same ideas inside a real production engine, vLLM, watched live (or its recording, where no vLLM runs).
<a class="kv-live-link" href="{SERVED_LIVE}?node=vllm">Open node {html.escape(BY_KEY["vllm"].number)}</a></p></div>
</section>"""  # noqa: E501 (data: a string kept as written)

# The played page's hand-in box (player_handin.js: handIn): under Explain it back and, on a served
# page, under each answered prediction (player_predict.js: resolve), as the live page has one under
# its verdicts.
HANDIN_BOX = """<div class="kv-handin-played"><p>Your teacher sees your answer, your self-checks and what you
predicted, and the state you reached. Hand in again later: it adds to what you handed in before.</p>
<label>Your name <input class="kv-handin-name" type="text" maxlength="60" autocomplete="nickname"></label>
<button type="button" class="kv-handin-send" onclick="window.kvvizPlayer.handIn(this)">Hand in</button>
<span class="kv-handin-status" role="status"></span></div>"""

# The page's hand-in, under Explain it back: the answer, the self-checks and every prediction
# made on the page, with the state reached, in one request.
HANDIN_HTML = f"""<section class="kv-live-links" aria-label="Hand in">
<h2>Hand in to your teacher</h2>
{HANDIN_BOX}
</section>"""


def note_html(facts: dict[str, str], live_url: str | None, served: bool = False) -> str:
    """The page's provenance: one quiet line at its foot (what was recorded, when, from which code
    and weights; what runs live)."""
    e = html.escape
    made = (f'code {e(facts["commit"])} · model weights sha256 {e(facts["model_sha256"][:12])}…')
    if served:
        return (f'<p class="kv-recording" role="note">Recorded from this server\'s engine at '
                f'{e(facts["time"])} ({made}): the controls, Step and Play replay states the real engine '
                'reached, '
                "in your browser; a prompt or question you type runs live on the server.</p>")
    live = (f' Typing your own prompt or question needs the <a href="{e(live_url)}">live lesson</a>.'
            if live_url
            else " Typing your own prompt or question needs the live lesson (<code>make lesson</code>).")
    return (f'<p class="kv-recording" role="note">A recording of the live lesson, made on '
            f'{e(facts["date"])} from the real engine ({made}): every state is one the engine reached; Step, '
            'Play, '
            f"Rewind and the controls replay them.{live}</p>")


def _pack(data: dict[str, Any]) -> str:
    """A recording as gzipped JSON in base64 (the player inflates it: player.js `inflate`). Written
    by msgspec: the same JSON once parsed as `json.dumps` writes (but for how a float or a non-ASCII
    character is spelled), in a fifth of the time: node 01's 9 MB, 0.2 s with `json.dumps`, on the
    recording's last stretch, once for its page and once for the whole lesson's."""
    return base64.b64encode(gzip.compress(msgspec.json.encode(data), 9, mtime=0)).decode()


def _with_class(doc: Document, css_class: str) -> list[Model]:
    return [m for m in doc.models if css_class in classes(m)]


def _by_class(doc: Document, css_class: str) -> Model:
    """The one model of `doc` with this CSS class."""
    found = _with_class(doc, css_class)
    if len(found) != 1:
        raise LookupError(f"{len(found)} models with class {css_class!r}")
    return found[0]


@dataclass
class _Node:
    """What a recorded node's `register` call holds besides its recording."""

    key: str
    recipe: Recipe
    order: Sequence[str]  # its models' ids, in `model_order`
    meta: dict[str, Any]
    ids: dict[str, Any]


@dataclass
class Page:
    """A page built but for its nodes' recordings (`start`); `finish` adds them (`add`: one node's,
    made as soon as its walk is done, so that the page is finished sooner once the last arrives)."""

    doc: Document
    scripts: list[str]
    served: bool
    nodes: list[_Node] = field(default_factory=list)
    checks: dict[str, str] | None = None  # Explain it back's parts the player writes, if it is here
    added: dict[str, tuple[str, list[list[Any]]]] = field(default_factory=dict)  # key -> `add`'s

    def add(self, key: str, walked: dict[str, Walked] | None = None,
            predicted: dict[str, Any] | None = None) -> None:
        """Node `key`'s part of the page (if it is here), from its walk `walked[key]` or one walked
        here (added to `walked`) and, on a served page, its predictions `predicted[key]` (made here
        if not there, and added)."""
        node = next((n for n in self.nodes if n.key == key), None)
        if node is None or key in self.added:
            return
        if self.served:
            predicted = {} if predicted is None else predicted
            if key not in predicted:
                predicted[key] = predictions(Lesson({}).states[key], node.recipe)  # (states with no view)
            node.meta["predict"] = predicted[key]
        known = walked.get(key) if walked is not None else None
        if known is None:  # (not walked by this export yet: walked now, here; kvviz/export/walk.py)
            rec, places = walk.walk_all({key: list(node.recipe.branches)}, workers=1)[key]
            known = Walked(rec, places, node.meta.get("predict"))
            if walked is not None:
                walked[key] = known
        self.added[key] = (f"{REGISTER}{json.dumps(key)}, "
                           f"{json.dumps(_pack(known.placed_in(node.order).to_json()))}, "
                           f"{json.dumps(node.meta)}, {json.dumps(node.ids)}, "
                           f"{json.dumps(node.recipe.default)});", known.placed)

    def finish(self, walked: dict[str, Walked] | None = None, predicted: dict[str, Any] | None = None,
               explained: dict[str, Any] | None = None) -> tuple[Document, list[str], dict[str, list[Any]]]:
        """The page with every node's recording (each node not `add`ed yet added now); returns the
        document, its scripts and each node's recorded properties as (place in `model_order`,
        name): what a live process reads for a frame (kvviz/serve/live.py). `explained`: Explain
        it back's self-checks (`checks.meta`), where this export made them already (else made here)."""
        scripts = list(self.scripts)
        if self.checks is not None:  # (Explain it back, before the nodes: the player's order)
            if not explained:
                explained = checks.meta(None, recipes())
            scripts.append(f"{CHECKS_SETUP}{json.dumps(explained)}, {json.dumps(self.checks)});")
        for node in self.nodes:
            self.add(node.key, walked, predicted)
            scripts.append(self.added[node.key][0])
        return self.doc, scripts, {node.key: self.added[node.key][1] for node in self.nodes}


def start(keys: list[str], live_url: str | None, facts: dict[str, str], served: bool = False) -> Page:
    """A document holding the note and the nodes `keys`, their controls wired to the player, but
    not yet their recordings, their predictions nor Explain it back's self-checks (`Page.finish`).
    `served`: the page is served beside the live lesson, so the controls that need an engine
    continue their node live (else they are shown disabled)."""
    lesson, plan = Lesson({}), recipes()
    # Each node's view (with, under its controls, the line that says when the server ran something live)
    views = {k: node_column(lesson, k) for k in keys}
    notes = pn.pane.HTML(note_html(facts, live_url, served), sizing_mode="stretch_width",
                         css_classes=["kv-prose", "kv-provenance"])
    whole = len(keys) > 1  # (the whole lesson: in its frame, as the live page has it)
    prose: dict[str, Any] = {"sizing_mode": "stretch_width", "css_classes": ["kv-prose"]}
    parts = [*(opening(heading=True) if whole else [page_heading(keys[0])])]
    for k in keys:
        if k == "explain" and served and whole:
            parts.append(pn.pane.HTML(NODE_04_HTML, **prose))
        parts.append(views[k])
        if k == "explain":
            parts.append(pn.pane.HTML(HANDIN_HTML, **prose))
    # (the shortcut keys, acted on by the page's player: kvviz/web/keyboard.py; the <details> a
    # student opened, kept open as the states are shown: kvviz/web/keep_open.py)
    keys_pane = Keyboard(played=True, height=0, width=0, margin=0)
    layout = pn.Column(*parts, *(closing() if whole else []), notes, keys_pane, KeepOpen(),
                       sizing_mode="stretch_width", css_classes=["kv-embed"], margin=(8, 14))
    doc = Document()
    doc.add_root(layout.get_root(doc))  # (no Comm: with one, Panel holds model changes for it)
    live_config = ({"handin": SERVED_HANDIN, "frames": SERVED_FRAMES, "handinBox": HANDIN_BOX} if served
                   else {}) | {"afterPaint": AFTER_PAINT}
    page = Page(doc, [f"window.kvvizPlayer.configure({json.dumps(live_config)});"], served)
    if served:  # (the class the teacher runs: the roster's reports, pause, pace, follow me)
        classroom = browser_config(SERVED_REPORT, SERVED_CLASS, OUTLINE)
        page.scripts.append(f"window.kvvizPlayer.classroom.setup({json.dumps(classroom)});")
    for key in keys:
        recipe: Recipe | None = plan.get(key)
        if recipe is None:  # explain it back: its self-checks answered from the recorded runs
            mine = _by_class(doc, f"kv-recorded-{key}").references()
            with doc.models.freeze():  # (see below)
                page.checks = checks.wire(mine)
            continue
        recipe.branches[recipe.default](lesson.states[key])  # (the default branch's settled end: saved so)
        # (the line under a node's controls that says a branch was run live: node 04 has none)
        view, live = _by_class(doc, f"kv-recorded-{key}"), f"kv-live-{key}"
        ids: dict[str, Any] = {"view": view.id,
                               "live": _by_class(doc, live).id if _with_class(doc, live) else None}
        order = [m.id for m in model_order(view)]
        mine = view.references()  # (the node's own models: its controls)
        # (each callback attached is a new model of the document: Bokeh finds the document's
        # models again after each, the whole page's, unless frozen until all are attached)
        with doc.models.freeze():
            play = wire(mine, key, recipe.controls)
            if served:
                wire_live(mine, key, recipe.live_only)
                predict_ids = wire_predictions(mine, key)
            else:
                disable(mine, recipe.live_only)
        for name, css in (("counter", "kv-counter"), ("said", f"kv-said-{key}")):  # (the step, the sentence)
            ids[name] = next((m.id for m in mine if css in classes(m)), None)
        url = BY_KEY[key].url
        meta = {**recipe.meta, "params": list(url.PARAMS) if url else [],
                # (what the node's own actions do, as data: the generic player runs them)
                "vars": recipe.vars, "branch": recipe.branch, "says": said_texts(),
                "actions": {name: asdict(effect) for name, effect in recipe.actions.items()}}
        if served:
            meta["models"] = order  # (a live frame names a model by its place: kvviz/serve/live.py)
            meta["controls"] = {c.action: c.id for c in recipe.controls if c.action not in TRANSPORT_ACTIONS}
            ids.update(predict_ids)  # (and its predictions, `Page.finish`)
        ids["play"] = play.id if play else None
        page.nodes.append(_Node(key, recipe, order, meta, ids))
    return page


def build_page(keys: list[str], live_url: str | None, facts: dict[str, str], served: bool = False,
               walked: dict[str, Walked] | None = None,
               explained: dict[str, Any] | None = None) -> tuple[Document, list[str], dict[str, list[Any]]]:
    """`start` then `Page.finish` at once: a page whose nodes' walks are done (`walked`: reused,
    their predictions too) or walked here (and added to `walked`)."""
    predicted = {k: w.predict for k, w in (walked or {}).items() if w.predict is not None}
    return start(keys, live_url, facts, served).finish(walked, predicted, explained)


Rendered = Callable[[list[str]], str]  # a page's HTML, given its scripts (`render`)


def render(doc: Document, path: Path, title: str) -> Rendered:
    """The page's HTML but for its scripts (its libraries copied beside `path`); the function
    returned adds them (with the player) and gives the whole page."""
    # (the template adds the viewport tag: a phone lays the page out at its own width, not 980 px)
    pn.io.save.save(doc, str(path), resources=RESOURCES, title=title, template=NODE_PAGE_TEMPLATE)
    text = libraries.version_stylesheets(libraries.localise(path.read_text(encoding="utf-8"), path.parent),
                                          libraries.stylesheet_version())
    # (a stylesheet the live page has from Panel's /components/ route: copied beside the pages)
    text = libraries.preload_stylesheets(text.replace(stylesheet.ROUTE + "assets/", ""))
    libraries.copy_libraries(text, path.parent)
    end = text.rindex("</body>")  # (the inlined libraries contain the string too)

    def with_scripts(scripts: list[str]) -> str:
        player = f"<script>{PLAYER_JS}\n{checks.CHECKS_JS}\n{CLASSROOM_JS}\n{''.join(scripts)}</script>"
        return text[:end] + player + "\n" + text[end:]

    return with_scripts

