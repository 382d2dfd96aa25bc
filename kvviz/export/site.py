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

import torch

from kvviz import page_text
from kvviz.export import checks, page, walk
from kvviz.export.page_models import FRAMES_FILE, page_config
from kvviz.export.recipes import recipes
from kvviz.export.reuse import Walked
from kvviz.lesson import SYSTEM_FONTS
from kvviz.nodes import BY_KEY, LIVE, NODES
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
    # (every node's states, walked on every core: kvviz/export/walk.py, each node in one worker,
    # which first makes what the node's pages need besides its walk: its self-checks and
    # predictions, running its engine through every branch, runs its walk then finds made.
    # Meanwhile this process, which only waits for the workers, builds every page but for those
    # (kvviz/export/page.py), then finishes each node's page as soon as its walk is done)
    plan = recipes()
    unwalked = {n.key: list(plan[n.key].branches) for n in nodes if n.key in plan and n.key not in walked}
    parts = len(walk.pieces(unwalked)) if unwalked else 0
    total = parts + len(nodes) + (0 if only else 1)
    ready: queue.Queue[tuple[str, walk.Walk]] = queue.Queue()
    told = _Told(progress, total)  # (from both threads)
    whole_keys = [*(n.key for n in recorded), "explain"]
    predicted = {k: w.predict for k, w in walked.items() if w.predict is not None}
    checked = set(checks.checked(plan)) if wanted and explained is None else set()
    # (the nodes whose predictions a served page holds: those on its pages)
    shown = {k for k in [*(n.key for n in nodes), *([] if only else whole_keys)] if served and k in plan}
    needs = [walk.Facts(k, k in checked, k in shown and k not in predicted)
             for k in dict.fromkeys([*checked, *sorted(shown)]) if k in checked or k not in predicted]
    made: dict[str, dict[str, Any]] = {}  # node -> its part of the self-checks (`checks.node_meta`)

    def facts_made(key: str, facts_of: dict[str, Any]) -> None:  # (in the walks' thread)
        if "checks" in facts_of:
            made[key] = facts_of["checks"]
        if "predict" in facts_of:
            predicted[key] = facts_of["predict"]

    # (the workers forked here, before this process starts a thread: kvviz/export/walk.py `forked`)
    lanes = len({k for k in [*unwalked, *(f.key for f in needs)]})
    if lanes > 1:  # (this process's engine runs beside the workers' (each node's default branch, for
        # its page): on one thread, as theirs. Two, with both cores busy, spun against them: the
        # first page took 6 s instead of 0.8)
        torch.set_num_threads(1)
    workers = walk.forked(min(walk.procs(), lanes)) if lanes > 1 else None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvviz-walks") as waiting:
        walking = None
        if unwalked or needs:
            told.tell()
            walking = waiting.submit(walk.walk_all, unwalked, on_done=lambda n, _all: told.tell(pieces=n),
                                     on_node=lambda key, w: ready.put((key, w)), pool=workers,
                                     workers=min(walk.procs(), lanes), facts=needs, on_facts=facts_made)
        started = {n.key: _started([n.key], out / f"{n.key}.html",
                                   f"{page_text.TITLE} · {n.title} (recording)", live_url, facts, served)
                   for n in nodes}
        if not only:  # (the whole lesson's page, built meanwhile too: its nodes' walks are the same)
            started["index"] = _started(whole_keys, out / "index.html", f"{page_text.TITLE} (recording)",
                                        live_url, facts, served)
        placed_by: dict[str, dict[str, list[Any]]] = {}
        # (Explain it back's page, with its self-checks, once every worker has made its part)
        last = [n for n in nodes if n.key == "explain"]
        first = [n for n in nodes if n.key not in unwalked and n not in last]
        rest = (walk.as_walked([n for n in nodes if n.key in unwalked], ready, walking) if walking
                else iter(()))
        for node, walk_of in itertools.chain(((n, None) for n in first), rest):
            if walk_of is not None:
                walked[node.key] = Walked(walk_of[0], walk_of[1], None)
            told.tell(what=f"node {node.number} · {node.title}")
            placed_by[node.key] = _finish(started[node.key], out / f"{node.key}.html", walked, predicted)
            if "index" in started:  # (its part of the whole lesson's page too, now rather than at the end)
                started["index"][0].add(node.key, walked, predicted)
            still = walking is not None and not walking.done()
            told.tell(pages=told.pages + 1, what="the nodes' states" if still else told.what)
        if walking is not None:
            walking.result()  # (every node's facts made: a worker's error raised here)
    if wanted and explained is None:
        explained = checks.meta(None, plan, made)
    for node in last:
        placed_by[node.key] = _finish(started[node.key], out / f"{node.key}.html", walked, predicted,
                                      explained)
        told.tell(pages=told.pages + 1)
    frames: dict[str, list[Any]] = {}  # node -> its recorded properties (kvviz/serve/live.py)
    for node in nodes:  # (in the lesson's order, however the walks finished)
        frames.update(placed_by[node.key])
    pages = [out / f"{node.key}.html" for node in nodes]
    if not only:
        progress("the whole lesson's page", parts + len(nodes), total)
        _finish(started["index"], out / "index.html", walked, predicted, explained)
        pages.append(out / "index.html")
    if served:  # (what kvviz/serve/live.py reads for a frame, beside the pages)
        (out / FRAMES_FILE).write_text(json.dumps(frames), encoding="utf-8")
    (out / "recording.json").write_text(json.dumps({**facts, "fonts": SYSTEM_FONTS}, indent=2),
                                        encoding="utf-8")
    return pages


# (a page built but for its recordings, and its HTML but for its scripts)
_Started = tuple[page.Page, page.Rendered]


def _started(keys: list[str], path: Path, title: str, live_url: str | None, facts: dict[str, str],
             served: bool) -> _Started:
    built = page.start(keys, live_url, facts, served)
    return built, page.render(built.doc, path, title)


def _finish(started: _Started, path: Path, walked: dict[str, Walked], predicted: dict[str, Any],
            explained: dict[str, Any] | None = None) -> dict[str, list[Any]]:
    """The page written with its nodes' recordings, predictions and self-checks; returns their
    recorded properties (`Page.finish`)."""
    built, rendered = started
    _doc, scripts, placed = built.finish(walked, predicted, explained)
    path.write_text(rendered(scripts), encoding="utf-8")
    return placed
