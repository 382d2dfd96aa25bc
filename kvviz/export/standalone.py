"""A written page made whole: every file it links put inside it, so that one HTML text plays with
no folder beside it and no network (a notebook's output, kvviz/notebook.py, holds it in an
iframe; a static page made from the notebook keeps it).

A page of the static site (site.py) links its libraries and stylesheets under `static/` beside it:
here each script becomes an inline script, each linked stylesheet a `<style>`, each stylesheet its
Bokeh document names (drawn into a component's shadow root) a `data:` URL, and the preloads go.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

SCRIPT_RE = re.compile(r'<script type="text/javascript" src="([^"]+)"></script>')
STYLESHEET_RE = re.compile(r'<link rel="stylesheet" href="([^"]+)"[^>]*>')
PRELOAD_RE = re.compile(r'<link rel="preload" as="style" href="[^"]+">')
END_SCRIPT_RE = re.compile(r"</(?=script)", re.I)
END_STYLE_RE = re.compile(r"</(?=style)", re.I)
ESCAPED = r"<\\/"  # (the same text in JavaScript's strings and CSS's)
# (a stylesheet named in the document's JSON: Bokeh's ImportedStyleSheet)
MODEL_URL_RE = re.compile(r'"url":"([A-Za-z0-9_./@^-]+\.css(?:\?v=[0-9A-Za-z.]+)?)"')


def linked(folder: Path, ref: str) -> Path:
    """The file a page in `folder` links as `ref` (relative, maybe with a `?v=` version); never one
    outside the folder."""
    path = (folder / ref.split("?", 1)[0].removeprefix("./")).resolve()
    if folder.resolve() not in path.parents or not path.is_file():
        raise FileNotFoundError(f"the page links {ref!r}, which is not a file under {folder}")
    return path


def standalone(page: Path) -> str:
    """The page at `page`, with every file it links (under its folder) inside it."""
    folder, text = page.parent, page.read_text(encoding="utf-8")

    def script(match: re.Match[str]) -> str:
        code = linked(folder, match.group(1)).read_text(encoding="utf-8")
        # (a script ends at the first "</script" whatever it is in: in JavaScript "<\/" is "</")
        return '<script type="text/javascript">' + END_SCRIPT_RE.sub(ESCAPED, code) + "</script>"

    def style(match: re.Match[str]) -> str:
        css = linked(folder, match.group(1)).read_text(encoding="utf-8")
        return "<style>" + END_STYLE_RE.sub(ESCAPED, css) + "</style>"

    def data_url(match: re.Match[str]) -> str:
        css = linked(folder, match.group(1)).read_bytes()
        return f'"url":"data:text/css;base64,{base64.b64encode(css).decode()}"'

    # (the libraries hold text that looks like a stylesheet's URL: the page's own parts first)
    text = MODEL_URL_RE.sub(data_url, PRELOAD_RE.sub("", STYLESHEET_RE.sub(style, text)))
    return SCRIPT_RE.sub(script, text)
