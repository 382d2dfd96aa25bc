"""Write the static site: a page per recorded node, index.html with all of them, and what they need.

A node is recorded when its registry entry has a recipe (kvviz/nodes/<node>/recording.py); a node that watches
something outside the lesson (node 04, a live vLLM) has nothing to record and is left out.

Every page is a Bokeh document saved with its recordings and the player inlined; BokehJS, Panel's
JavaScript, the lesson's stylesheet and Panel's component stylesheets are written once beside the
pages, under `static/` (so the site opens from disk with no network, each library is fetched once
for every page, and a server can hand them out as cacheable files). The page says it is a recording: when, which model (the weights'
SHA-256) and which code (the engine's version and the git commit).
"""

from __future__ import annotations

import base64
import datetime
import gzip
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import panel as pn
from bokeh.document import Document
from bokeh.resources import Resources
from bokeh.util.paths import bokehjsdir

from kvviz import page_text
from kvviz.export.player import PLAYER_JS, disable, wire
from kvviz.export.recipes import Recipe, recipes
from kvviz.export.record import record
from kvviz.lesson import CSS_PATH, SYSTEM_FONTS, Lesson
from kvviz.nodes import BY_KEY, LIVE

ROOT = Path(__file__).resolve().parents[2]
PANEL_DIST = Path(pn.__file__).resolve().parent / "dist"
CDN_RE = re.compile(r"https://cdn\.holoviz\.org/panel/[^/]+/dist/([A-Za-z0-9_./-]+)")
BOKEH_STATIC = Path(bokehjsdir())
# The page's libraries, linked relative to it (`./static/...`, as a Bokeh server names them).
RESOURCES = Resources(mode="server", root_url="./")
LIBRARY_RE = re.compile(r'(?:src|href)="(?:\./)?(static/(js|extensions/panel)/([A-Za-z0-9_./@^-]+?))(?:\?v=[0-9a-f]+)?"')


def provenance() -> dict[str, str]:
    model = json.loads((ROOT / "assets" / "model.json").read_text(encoding="utf-8"))
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    return {"date": datetime.date.today().isoformat(), "model_sha256": model["weights_sha256"],
            "commit": commit}


def note_html(facts: dict[str, str], live_url: str | None) -> str:
    e = html.escape
    live = (f' Typing your own prompt or question needs the <a href="{e(live_url)}">live lesson</a>.'
            if live_url else " Typing your own prompt or question needs the live lesson (`make lesson`).")
    return (f'<div class="kv-recording" role="note"><b>A recording of the live lesson</b>, made on {e(facts["date"])} '
            f'from the real engine (code {e(facts["commit"])}, model weights sha256 {e(facts["model_sha256"][:12])}…): '
            f"every state below is one the engine reached; Step, Play, Rewind and the controls replay them.{live}</div>")


def _pack(data: dict) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode()


def build_page(keys: list[str], live_url: str | None, facts: dict) -> tuple[Document, list[str]]:
    """A document holding the note and the nodes `keys`, recorded; returns it and its scripts."""
    lesson, plan = Lesson({}), recipes()
    views = [lesson.view(k) for k in keys]
    notes = pn.pane.HTML(note_html(facts, live_url), sizing_mode="stretch_width")
    layout = pn.Column(notes, *views, sizing_mode="stretch_width", css_classes=["kv-embed"], margin=(8, 14))
    doc = Document()
    doc.add_root(layout.get_root(doc))  # (no Comm: with one, Panel holds model changes for it)
    scripts = []
    for key in keys:
        recipe: Recipe | None = plan.get(key)
        if recipe is None:  # explain it back: nothing to replay, nothing to type into
            disable(doc, {m.title for m in doc.models if hasattr(m, "title") and isinstance(m.title, str)})
            continue
        state = lesson.states[key]
        rec = record(doc, state, recipe.branches, lambda r=recipe, s=state: r.branches[r.default](s))
        play = wire(doc, key, recipe.controls)
        disable(doc, recipe.live_only)
        scripts.append(f"window.kvvizPlayer.controllers[{json.dumps(key)}] = {recipe.controller};")
        scripts.append(f"window.kvvizPlayer.register({json.dumps(key)}, {json.dumps(_pack(rec.to_json()))}, "
                       f"{json.dumps(recipe.meta)}, {json.dumps(play.id if play else None)}, "
                       f"{json.dumps(recipe.default)});")
    return doc, scripts


def _localise(text: str, out: Path) -> str:
    """Panel's component stylesheets point at its CDN: copy each into OUT/static/panel and point
    there instead (a recording must open with no network)."""
    def local(match: re.Match) -> str:
        rel = match.group(1)
        src = (PANEL_DIST / rel).resolve()
        if not src.is_file() or PANEL_DIST not in src.parents:
            raise FileNotFoundError(f"Panel resource {rel} is not in {PANEL_DIST}")
        dest = out / "static" / "extensions" / "panel" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        return f"static/extensions/panel/{rel}"
    return CDN_RE.sub(local, text)


def _copy_libraries(text: str, out: Path) -> None:
    """Copy every library the page links (BokehJS's, Panel's) from the installed packages into
    OUT/static/, where the page's relative links find them."""
    for match in LIBRARY_RE.finditer(text):
        rel, kind, name = match.groups()
        root = BOKEH_STATIC / "js" if kind == "js" else PANEL_DIST
        src = (root / name).resolve()
        if not src.is_file() or root.resolve() not in src.parents:
            raise FileNotFoundError(f"library {rel} is not in {root}")
        dest = out / rel
        if not dest.is_file() or dest.stat().st_size != src.stat().st_size:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)


def write_page(doc: Document, scripts: list[str], path: Path, title: str) -> None:
    pn.io.save.save(doc, str(path), resources=RESOURCES, title=title)
    text = _localise(path.read_text(encoding="utf-8"), path.parent)
    _copy_libraries(text, path.parent)
    player = f"<script>{PLAYER_JS}\n{''.join(scripts)}</script>"
    end = text.rindex("</body>")  # (the inlined libraries contain the string too)
    text = text[:end] + player + "\n" + text[end:]
    path.write_text(text, encoding="utf-8")


def export(out: Path, live_url: str | None = None, only: list[str] | None = None) -> list[Path]:
    """Write the site into `out` (only the node pages `only`, if given; else every node page and
    index.html); returns the pages written."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CSS_PATH, out / "kvviz.css")
    with pn.config.set(css_files=["kvviz.css"], raw_css=[]):  # (linked beside the pages)
        return _write_pages(out, live_url, only)


def _write_pages(out: Path, live_url: str | None, only: list[str] | None) -> list[Path]:
    facts, pages, recorded = provenance(), [], [n for n in LIVE if n.key in recipes()]
    for node in [*recorded, BY_KEY["explain"]]:
        if only and node.key not in only:
            continue
        doc, scripts = build_page([node.key], live_url, facts)
        pages.append(out / f"{node.key}.html")
        write_page(doc, scripts, pages[-1], f"{page_text.TITLE} · {node.title} (recording)")
    if not only:
        doc, scripts = build_page([n.key for n in recorded], live_url, facts)
        pages.append(out / "index.html")
        write_page(doc, scripts, pages[-1], f"{page_text.TITLE} (recording)")
    (out / "recording.json").write_text(json.dumps({**facts, "fonts": SYSTEM_FONTS}, indent=2), encoding="utf-8")
    return pages
