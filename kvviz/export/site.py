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

import datetime
import itertools
import json
import queue
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kvviz import page_text
from kvviz.export import checks, page, walk
from kvviz.export.page_models import FRAMES_FILE, page_config
from kvviz.export.recipes import recipes
from kvviz.export.reuse import Walked
from kvviz.lesson import SYSTEM_FONTS, Lesson
from kvviz.nodes import BY_KEY, LIVE, NODES
from kvviz.timeline import eager_snapshots
from kvviz.web import stylesheet

ROOT = Path(__file__).resolve().parents[2]


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
    facts = provenance()
    # (Explain it back's self-checks per run: made once, for every page that holds it)
    wanted = not only or (not served and "explain" in only)
    # (walked: node -> its walk, made for its own page and reused by index.html, or given)
    # (served: explain is in index.html only)
    nodes = [n for n in [*recorded, *([] if served else [BY_KEY["explain"]])] if not only or n.key in only]
    # (every node's states, walked on every core: kvviz/export/walk.py. Meanwhile this process, which
    # only waits for the workers, makes the self-checks (before the workers, where they are forked:
    # below) and builds every page but for its nodes' recordings (kvviz/export/page.py), then
    # finishes each node's page as soon as its walk is done)
    plan = recipes()
    unwalked = {n.key: list(plan[n.key].branches) for n in nodes if n.key in plan and n.key not in walked}
    parts = len(walk.pieces(unwalked)) if unwalked else 0
    total = parts + len(nodes) + (0 if only else 1)
    ready: queue.Queue[tuple[str, walk.Walk]] = queue.Queue()
    told = _Told(progress, total)  # (from both threads)
    whole_keys = [*(n.key for n in recorded), "explain"]
    # (the workers forked here, before this process starts a thread: kvviz/export/walk.py `forked`.
    # The self-checks are made first then: they run the engine through every branch, keeping each
    # step's snapshot (`eager_snapshots`), which the workers' walks then find done, running no
    # engine (each process's timelines remember their runs: kvviz/timeline_memo.py, ~1,200 states
    # of its 3,000). A fifth of the recording's CPU not spent twice)
    workers, procs = None, min(walk.procs(), parts)
    if parts > 1 and walk.forks(procs):
        if wanted and explained is None:
            told.tell()
            with eager_snapshots():
                explained = checks.meta(Lesson({}).states, plan)
        workers = walk.forked(procs)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvviz-walks") as waiting:
        walking = None
        if unwalked:
            told.tell()
            walking = waiting.submit(walk.walk_all, unwalked, on_done=lambda n, _all: told.tell(pieces=n),
                                     on_node=lambda key, made: ready.put((key, made)), pool=workers)
        if wanted and explained is None:  # (not forked: made here while the workers walk)
            explained = checks.meta(Lesson({}).states, plan)
        predicted = {k: w.predict for k, w in walked.items() if w.predict is not None}
        started = {n.key: _started([n.key], out / f"{n.key}.html",
                                   f"{page_text.TITLE} · {n.title} (recording)", live_url, facts, served,
                                   predicted, explained) for n in nodes}
        if not only:  # (the whole lesson's page, built meanwhile too: its nodes' walks are the same)
            started["index"] = _started(whole_keys, out / "index.html", f"{page_text.TITLE} (recording)",
                                        live_url, facts, served, predicted, explained)
        placed_by: dict[str, dict[str, list[Any]]] = {}
        needless = set(walked) | (set(BY_KEY) - set(plan))  # (walked already, or with no recipe)
        first = [n for n in nodes if n.key in needless]
        rest = walk.as_walked([n for n in nodes if n not in first], ready, walking) if walking else iter(())
        for node, made in itertools.chain(((n, None) for n in first), rest):
            if made is not None:
                walked[node.key] = Walked(made[0], made[1], None)
            told.tell(what=f"node {node.number} · {node.title}")
            placed_by[node.key] = _finish(started[node.key], out / f"{node.key}.html", walked)
            still = walking is not None and not walking.done()
            told.tell(pages=told.pages + 1, what="the nodes' states" if still else told.what)
    frames: dict[str, list[Any]] = {}  # node -> its recorded properties (kvviz/serve/live.py)
    for node in nodes:  # (in the lesson's order, however the walks finished)
        frames.update(placed_by[node.key])
    pages = [out / f"{node.key}.html" for node in nodes]
    if not only:
        progress("the whole lesson's page", parts + len(nodes), total)
        _finish(started["index"], out / "index.html", walked)
        pages.append(out / "index.html")
    if served:  # (what kvviz/serve/live.py reads for a frame, beside the pages)
        (out / FRAMES_FILE).write_text(json.dumps(frames), encoding="utf-8")
    (out / "recording.json").write_text(json.dumps({**facts, "fonts": SYSTEM_FONTS}, indent=2),
                                        encoding="utf-8")
    return pages


# (a page built but for its recordings, and its HTML but for its scripts)
_Started = tuple[page.Page, page.Rendered]


def _started(keys: list[str], path: Path, title: str, live_url: str | None, facts: dict[str, str],
             served: bool, predicted: dict[str, Any], explained: dict[str, Any] | None) -> _Started:
    built = page.start(keys, live_url, facts, served, predicted, explained)
    return built, page.render(built.doc, path, title)


def _finish(started: _Started, path: Path, walked: dict[str, Walked]) -> dict[str, list[Any]]:
    """The page written with its nodes' recordings; returns their recorded properties (`Page.finish`)."""
    built, rendered = started
    _doc, scripts, placed = built.finish(walked)
    path.write_text(rendered(scripts), encoding="utf-8")
    return placed
