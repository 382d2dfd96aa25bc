"""What a saved page links, beside it: BokehJS's and Panel's libraries and Panel's component
stylesheets copied from the installed packages into the site's `static/` (a recording opens with no
network), and every stylesheet link versioned and preloaded (a browser keeps them). Used by
kvviz/export/page.py's render.
"""

from __future__ import annotations

import hashlib
import html
import re
import shutil
from pathlib import Path

import panel as pn
from bokeh.util.paths import bokehjs_path

from kvviz.web import stylesheet

ROOT = Path(__file__).resolve().parents[2]
PANEL_DIST = Path(pn.__file__).resolve().parent / "dist"
CDN_RE = re.compile(r"https://cdn\.holoviz\.org/panel/[^/]+/dist/([A-Za-z0-9_./-]+)")
BOKEH_STATIC = Path(bokehjs_path())
LIBRARY_RE = re.compile(r'(?:src|href)="(?:\./)?(static/(js|extensions/panel)/([A-Za-z0-9_./@^-]+?))'
                        r'(?:\?v=[0-9a-f]+)?"')


def localise(text: str, out: Path) -> str:
    """Panel's component stylesheets point at its CDN: copy each into OUT/static/panel and point
    there instead (a recording must open with no network)."""
    def local(match: re.Match[str]) -> str:
        rel = match.group(1)
        src = (PANEL_DIST / rel).resolve()
        if not src.is_file() or PANEL_DIST not in src.parents:
            raise FileNotFoundError(f"Panel resource {rel} is not in {PANEL_DIST}")
        dest = out / "static" / "extensions" / "panel" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        return f"static/extensions/panel/{rel}"
    return CDN_RE.sub(local, text)


def copy_libraries(text: str, out: Path) -> None:
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


# The stylesheets a page links (the lesson's, Panel's components'), as a page's text names them.
STYLESHEET_RE = re.compile(r'((?:"url":|href=)"(?:\./)?'
                           r'(?:kvviz\.css|static/extensions/panel/[A-Za-z0-9_./@^-]+\.css))"')
LINKED_RE = re.compile(r'"url":"((?:kvviz|handin)\.css\?v=[0-9a-f]+'
                       r'|static/extensions/panel/[A-Za-z0-9_./@^-]+\.css\?v=[0-9a-z.]+)"')


def version_stylesheets(text: str, version: str) -> str:
    """Every stylesheet link of a page with `?v=version` (one that has a version keeps it): a
    browser keeps them (kvviz/serve/routes.py, deploy's nginx: cached when versioned), so a
    button drawn again asks for none."""
    return STYLESHEET_RE.sub(lambda m: f'{m.group(1)}?v={version}"', text)


def preload_stylesheets(text: str) -> str:
    """Every stylesheet the page's components link (each drawn into its own shadow root when it is
    first shown), fetched with the page: a component drawn later, by a scripted action, finds it
    in the browser's cache and sends nothing."""
    urls = sorted(set(LINKED_RE.findall(text)))
    tags = "".join(f'<link rel="preload" as="style" href="{html.escape(u)}">' for u in urls)
    return text.replace("</head>", tags + "</head>", 1)


def stylesheet_version() -> str:
    """What the stylesheets depend on: the lesson's own and Panel's version."""
    h = hashlib.sha256(b"".join((ROOT / name).read_bytes() for name in stylesheet.STYLESHEETS)
                       + pn.__version__.encode())
    return h.hexdigest()[:12]
