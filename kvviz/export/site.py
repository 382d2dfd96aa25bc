"""Write the static site: a page per recorded node, index.html with all of them, and what they need.

A node is recorded when its registry entry has a recipe (kvviz/nodes/<node>/recipe.py); node 04, which
watches a live vLLM, is recorded from its shipped vLLM recording (kvviz/nodes/vllm/exported.py) on a static
site, and left to the live server on a served one.

Every page is a Bokeh document saved with its recordings and the player inlined; BokehJS, Panel's
JavaScript, the lesson's stylesheet and Panel's component stylesheets are written once beside the
pages, under `static/` (so the site opens from disk with no network, each library is fetched once
for every page, and a server can hand them out as cacheable files). The page says it is a recording: when,
which model (the weights' SHA-256) and which code (the engine's version and the git commit).
"""

from __future__ import annotations

import base64
import datetime
import gzip
import html
import itertools
import json
import queue
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import panel as pn
from bokeh.document import Document
from bokeh.model import Model
from bokeh.resources import Resources

from kvviz import page_text
from kvviz.controls.transport import said_texts
from kvviz.export import checks, libraries, walk
from kvviz.export.page_models import (
    FRAMES_FILE,
    TRANSPORT_ACTIONS,
    classes,
    model_order,
    node_column,
    page_config,
)
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
from kvviz.lesson import NODE_PAGE_TEMPLATE, SYSTEM_FONTS, Lesson, closing, opening, page_heading
from kvviz.nodes import BY_KEY, LIVE, NODES, OUTLINE
from kvviz.nodes.recipe import Recipe
from kvviz.web import stylesheet
from kvviz.web.keyboard import Keyboard
from kvviz.web.live_html import AFTER_PAINT

ROOT = Path(__file__).resolve().parents[2]
# The page's libraries, linked relative to it (`./static/...`, as a Bokeh server names them).
RESOURCES = Resources(mode="server", root_url="./")


def provenance() -> dict[str, str]:
    model = json.loads((ROOT / "assets" / "model.json").read_text(encoding="utf-8"))
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    now = datetime.datetime.now(datetime.UTC)
    return {"date": now.date().isoformat(), "time": now.strftime("%Y-%m-%d %H:%M UTC"),
            "model_sha256": model["weights_sha256"], "commit": commit}


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
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode()


def _with_class(doc: Document, css_class: str) -> list[Model]:
    return [m for m in doc.models if css_class in classes(m)]


def _by_class(doc: Document, css_class: str) -> Model:
    """The one model of `doc` with this CSS class."""
    found = _with_class(doc, css_class)
    if len(found) != 1:
        raise LookupError(f"{len(found)} models with class {css_class!r}")
    return found[0]


def build_page(keys: list[str], live_url: str | None, facts: dict[str, str], served: bool = False,
               walked: dict[str, Walked] | None = None,
               explained: dict[str, Any] | None = None) -> tuple[Document, list[str], dict[str, list[Any]]]:
    """A document holding the note and the nodes `keys`, recorded; returns it, its scripts and
    each node's recorded properties as (place in `model_order`, name): what a live process
    reads for a frame (kvviz/serve/live.py). `served`: the page is served beside the live
    lesson, so the controls that need an engine continue their node live (else they are shown
    disabled). `walked`: the nodes already recorded by an earlier page of this export (reused:
    put at their default state, not walked again), and where this page's walks are added.
    `explained`: Explain it back's self-checks per run (`checks.meta`), when this export made them
    already for another page."""
    lesson, plan = Lesson({}), recipes()
    # (states with no view: predictions are resolved on them, self-checks answered)
    spare = Lesson({}) if served or "explain" in keys else None
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
    # (the shortcut keys, acted on by the page's player: kvviz/web/keyboard.py)
    keys_pane = Keyboard(played=True, height=0, width=0, margin=0)
    layout = pn.Column(*parts, *(closing() if whole else []), notes, keys_pane,
                       sizing_mode="stretch_width", css_classes=["kv-embed"], margin=(8, 14))
    doc = Document()
    doc.add_root(layout.get_root(doc))  # (no Comm: with one, Panel holds model changes for it)
    live_config = ({"handin": SERVED_HANDIN, "frames": SERVED_FRAMES, "handinBox": HANDIN_BOX} if served
                   else {}) | {"afterPaint": AFTER_PAINT}
    scripts = [f"window.kvvizPlayer.configure({json.dumps(live_config)});"]
    if served:  # (the class the teacher runs: the roster's reports, pause, pace, follow me)
        classroom = browser_config(SERVED_REPORT, SERVED_CLASS, OUTLINE)
        scripts.append(f"window.kvvizPlayer.classroom.setup({json.dumps(classroom)});")
    placed: dict[str, list[Any]] = {}
    for key in keys:
        recipe: Recipe | None = plan.get(key)
        if recipe is None:  # explain it back: its self-checks answered from the recorded runs
            mine = _by_class(doc, f"kv-recorded-{key}").references()
            with doc.models.freeze():  # (see below)
                parts_ids = checks.wire(mine)
            if not explained:
                assert spare is not None  # (there is one for a page that holds Explain it back)
                explained = checks.meta(spare.states, plan)
            scripts.append(f"{CHECKS_SETUP}{json.dumps(explained)}, "
                           f"{json.dumps(parts_ids)});")
            continue
        state = lesson.states[key]

        def reset(r: Recipe = recipe, s: Any = state) -> None:  # (back to the default branch's settled end)
            r.branches[r.default](s)

        known = walked.get(key) if walked is not None else None
        made = known is None
        if known is None:  # (not walked by this export yet: walked now, here; kvviz/export/walk.py)
            rec, places = walk.walk_all({key: list(recipe.branches)}, workers=1)[key]
            known = Walked(rec, places, None)
        reset()  # (where the walk would have left it: the page is saved from there)
        # (the line under a node's controls that says a branch was run live: node 04 has none)
        view, live = _by_class(doc, f"kv-recorded-{key}"), f"kv-live-{key}"
        ids: dict[str, Any] = {"view": view.id,
                               "live": _by_class(doc, live).id if _with_class(doc, live) else None}
        order = [m.id for m in model_order(view)]
        rec = known.placed_in(order)
        placed[key] = known.placed
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
            ids.update(predict_ids)
            known_predict = known.predict  # (none from a static page's walk)
            if known_predict is None:
                assert spare is not None  # (there is one for a served page)
                known_predict = predictions(spare.states[key], recipe)
            meta["predict"] = known_predict
        ids["play"] = play.id if play else None
        if walked is not None and made:
            walked[key] = Walked(known.rec, placed[key], meta.get("predict"))
        scripts.append(f"{REGISTER}{json.dumps(key)}, {json.dumps(_pack(rec.to_json()))}, "
                       f"{json.dumps(meta)}, {json.dumps(ids)}, {json.dumps(recipe.default)});")
    return doc, scripts, placed


def write_page(doc: Document, scripts: list[str], path: Path, title: str) -> None:
    # (the template adds the viewport tag: a phone lays the page out at its own width, not 980 px)
    pn.io.save.save(doc, str(path), resources=RESOURCES, title=title, template=NODE_PAGE_TEMPLATE)
    text = libraries.version_stylesheets(libraries.localise(path.read_text(encoding="utf-8"), path.parent),
                                          libraries.stylesheet_version())
    # (a stylesheet the live page has from Panel's /components/ route: copied beside the pages)
    text = libraries.preload_stylesheets(text.replace(stylesheet.ROUTE + "assets/", ""))
    libraries.copy_libraries(text, path.parent)
    player = f"<script>{PLAYER_JS}\n{checks.CHECKS_JS}\n{CLASSROOM_JS}\n{''.join(scripts)}</script>"
    end = text.rindex("</body>")  # (the inlined libraries contain the string too)
    text = text[:end] + player + "\n" + text[end:]
    path.write_text(text, encoding="utf-8")


Progress = Callable[[str, int, int], None]  # (what is being recorded now, parts done, parts in all)


class _Told:
    """An export's progress, told from the thread that waits for the walks (pieces walked) and
    from the one that writes the pages (pages written): their sum is what is done."""

    def __init__(self, progress: Progress, total: int):
        self.progress, self.total = progress, total
        self.pieces, self.pages, self.what = 0, 0, "the nodes' states"

    def tell(self, pieces: int | None = None, pages: int | None = None, what: str | None = None) -> None:
        self.pieces = self.pieces if pieces is None else pieces
        self.pages = self.pages if pages is None else pages
        self.what = self.what if what is None else what
        self.progress(self.what, self.pieces + self.pages, self.total)


def export(out: Path, live_url: str | None = None, only: list[str] | None = None, served: bool = False,
           walked: dict[str, Walked] | None = None, progress: Progress | None = None,
           explained: dict[str, Any] | None = None) -> list[Path]:
    """Write the site into `out` (only the node pages `only`, if given; else every node page and
    index.html); returns the pages written. `served`: for a server beside the live lesson
    (kvviz/serve/routes.py), whose controls that need an engine continue live. `walked`: nodes
    already walked by this code (`reuse.walks(folder)` of its served recording), recorded from those
    walks rather than walked again. `progress`, if given, is told before each page is made.
    `explained`: Explain it back's self-checks as this code made them (`reuse.recorded_checks(folder)`
    of its served recording), reused rather than made again."""
    out.mkdir(parents=True, exist_ok=True)
    for name in stylesheet.STYLESHEETS:  # (the lesson's stylesheets, beside the pages)
        shutil.copyfile(ROOT / name, out / Path(name).name)
    with page_config():
        return _write_pages(out, live_url, only, served, dict(walked or {}), progress or (lambda *_: None),
                            explained)


def _write_pages(out: Path, live_url: str | None, only: list[str] | None, served: bool,
                 walked: dict[str, Walked], progress: Progress,
                 explained: dict[str, Any] | None) -> list[Path]:
    # (a served page opens node 04 live, from its link; a static one plays its vLLM recording)
    recorded = [n for n in NODES if n.key in recipes() and (n in LIVE or not served)]
    facts, pages = provenance(), []
    frames: dict[str, list[Any]] = {}  # node -> its recorded properties (build_page)
    # (Explain it back's self-checks per run: made once, for every page that holds it)
    wanted = not only or (not served and "explain" in only)
    # (walked: node -> its walk, made for its own page and reused by index.html, or given)
    # (served: explain is in index.html only)
    nodes = [n for n in [*recorded, *([] if served else [BY_KEY["explain"]])] if not only or n.key in only]
    # (every node's states, walked on every core: kvviz/export/walk.py. Meanwhile this process, which
    # only waits for the workers, makes the self-checks, then each node's page as soon as its walk
    # is done)
    plan = recipes()
    unwalked = {n.key: list(plan[n.key].branches) for n in nodes if n.key in plan and n.key not in walked}
    parts = len(walk.pieces(unwalked)) if unwalked else 0
    total = parts + len(nodes) + (0 if only else 1)
    ready: queue.Queue[tuple[str, walk.Walk]] = queue.Queue()
    told = _Told(progress, total)  # (from both threads)

    # (the workers forked here, before this process starts a thread: kvviz/export/walk.py `forked`)
    workers = walk.forked(min(walk.procs(), parts)) if parts > 1 else None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvviz-walks") as waiting:
        walking = None
        if unwalked:
            told.tell()
            walking = waiting.submit(walk.walk_all, unwalked, on_done=lambda n, _all: told.tell(pieces=n),
                                     on_node=lambda key, made: ready.put((key, made)), pool=workers)
        if wanted and explained is None:
            explained = checks.meta(Lesson({}).states, recipes())
        placed_by: dict[str, dict[str, list[Any]]] = {}
        needless = set(walked) | (set(BY_KEY) - set(plan))  # (walked already, or with no recipe)
        first = [n for n in nodes if n.key in needless]
        rest = walk.as_walked([n for n in nodes if n not in first], ready, walking) if walking else iter(())
        for node, made in itertools.chain(((n, None) for n in first), rest):
            if made is not None:
                walked[node.key] = Walked(made[0], made[1], None)
            told.tell(what=f"node {node.number} · {node.title}")
            doc, scripts, placed_by[node.key] = build_page([node.key], live_url, facts, served, walked,
                                                           explained)
            write_page(doc, scripts, out / f"{node.key}.html",
                       f"{page_text.TITLE} · {node.title} (recording)")
            still = walking is not None and not walking.done()
            told.tell(pages=told.pages + 1, what="the nodes' states" if still else told.what)
    for node in nodes:  # (in the lesson's order, however the walks finished)
        frames.update(placed_by[node.key])
        pages.append(out / f"{node.key}.html")
    if not only:
        progress("the whole lesson's page", parts + len(nodes), total)
        doc, scripts, _placed = build_page([*(n.key for n in recorded), "explain"], live_url, facts, served,
                                           walked, explained)
        pages.append(out / "index.html")
        write_page(doc, scripts, pages[-1], f"{page_text.TITLE} (recording)")
    if served:  # (what kvviz/serve/live.py reads for a frame, beside the pages)
        (out / FRAMES_FILE).write_text(json.dumps(frames), encoding="utf-8")
    (out / "recording.json").write_text(json.dumps({**facts, "fonts": SYSTEM_FONTS}, indent=2),
                                        encoding="utf-8")
    return pages
