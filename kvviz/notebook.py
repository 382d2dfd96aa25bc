"""A node of the lesson in a Jupyter notebook: `kvviz.node("paging")`.

    kvviz.node("paging")                  the node live, on this kernel's own engine (Panel's
                                          notebook support: the kernel answers every click)
    kvviz.node("fragmentation", recorded=True)
                                          the node as the recorded lesson plays it: every state the
                                          engine reached, played in the browser, in one
                                          self-contained frame that a static page made from the
                                          notebook keeps (nbconvert's HTML, Jupyter Book)

A recorded node is the static site's page of that node (kvviz/export/site.py), made from this
code's served recording (kvviz/export/cache.py: recorded once per code and model, on disk, and
shared with `kvviz lesson` and the tests), with every file it links inside it
(kvviz/export/standalone.py), gzipped in an iframe's `srcdoc`: no server, no network.
"""

from __future__ import annotations

import base64
import gzip
import html
import tempfile
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import panel as pn

from kvviz.lesson import CSS_PATH, Lesson
from kvviz.nodes import BY_KEY, LIVE

# What a recorded node's frame is until its page says how tall it is (FIT_JS); the frame's height
# where the page cannot tell it (a browser that keeps the frame from its parent).
FRAME_HEIGHT = 1100
# (in the frame: its height follows the page's content, as the content grows and shrinks)
FIT_JS = """<script>(() => {
  const frame = window.frameElement, main = document.querySelector("main");
  if (!frame || !main) return;
  const fit = () => { frame.style.height = `${Math.ceil(main.getBoundingClientRect().bottom + window.scrollY) + 16}px`; };
  new ResizeObserver(fit).observe(main);
  fit();
})();</script>"""  # noqa: E501 (data: a string kept as written)


# The frame's own document: the played page, gzipped (a third of its size: BokehJS and Panel's
# bundle are most of it), unpacked in the browser and written as the frame's document.
FRAME_DOCUMENT = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>
<script type="application/octet-stream" id="kvviz-page">{packed}</script><script>(async () => {{
  if (!("DecompressionStream" in window)) {{
    document.body.textContent = "This recording needs a current browser (Chrome, Edge, Firefox or Safari).";
    return;
  }}
  const bytes = Uint8Array.from(atob(document.getElementById("kvviz-page").textContent), (c) => c.charCodeAt(0));
  const page = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  document.open();
  document.write(page);
  document.close();
}})();</script></body></html>"""  # noqa: E501 (data: a string kept as written)


def frame_document(page: str, title: str) -> str:
    """The document of the iframe that shows `page` (FRAME_DOCUMENT)."""
    packed = base64.b64encode(gzip.compress(page.encode("utf-8"), 9, mtime=0)).decode("ascii")
    return FRAME_DOCUMENT.format(title=html.escape(title), packed=packed)


def recordable() -> tuple[str, ...]:
    """The nodes a recorded node can be: those with a page of their own in the static site."""
    from kvviz.export.recipes import recipes

    return (*recipes(), "explain")


def _check(key: object, recorded: bool) -> str:
    keys = recordable() if recorded else tuple(n.key for n in LIVE)
    if not isinstance(key, str) or key not in keys:
        other = "" if recorded or key not in BY_KEY else f' ({key!r} has no live view: try recorded=True)'
        raise ValueError(f"kvviz.node: no {'recorded' if recorded else 'live'} node {key!r}{other}; "
                         f"the {'recorded' if recorded else 'live'} nodes are "
                         f"{', '.join(repr(k) for k in keys)}")
    return key


def node(key: str, recorded: bool = False):
    """Node `key` ("fragmentation", "paging", "radix", ...) for a notebook's output: live on this
    kernel's engine, or `recorded` (a self-contained played page, for static pages too)."""
    key = _check(key, recorded)
    return Played(key, played_page(key)) if recorded else live(key)


# -- live ------------------------------------------------------------------------------------
_loaded = False


def live(key: str) -> pn.Column:
    """Node `key`'s view on a lesson of its own in this process: shown by Panel in a notebook
    (its extension loaded once, with its libraries inline: a classroom may have no network), every
    click answered by this kernel's engine."""
    global _loaded
    if not _loaded:
        pn.extension(inline=True, notifications=False)
        # (the lesson's stylesheet, in every component: a notebook has no route that serves it)
        pn.config.raw_css = [*pn.config.raw_css, CSS_PATH.read_text(encoding="utf-8")]
        _loaded = True
    lesson = Lesson({})
    # (with no outline: no back and continue links, whose pages a notebook does not hold)
    view = replace(BY_KEY[key], outline=()).new_view(lesson.states[key], handin=lesson.handin)
    return pn.Column(view, sizing_mode="stretch_width", css_classes=["kv-embed", f"kv-notebook-{key}"],
                     margin=(8, 14))


# -- recorded --------------------------------------------------------------------------------
@cache
def played_page(key: str) -> str:
    """Node `key`'s played page, self-contained (made once per process; the recording it plays,
    once per code and model: the first takes a minute or so)."""
    from kvviz.export import cache as recordings
    from kvviz.export.cache_folder import ready
    from kvviz.export.reuse import walks
    from kvviz.export.site import export
    from kvviz.export.standalone import standalone

    if ready() is None:
        print("kvviz: recording the lesson from this engine (once per code; under a minute)…", flush=True)
    walked = walks(recordings.make())
    with tempfile.TemporaryDirectory(prefix="kvviz-node-") as folder:
        [page] = export(Path(folder), only=[key], walked=walked)
        text = standalone(page)
    end = text.rindex("</body>")
    return text[:end] + FIT_JS + text[end:]


@dataclass(frozen=True)
class Played:
    """A recorded node in a notebook's output: its played page in an iframe's `srcdoc`."""

    key: str
    page: str  # the played page, self-contained (played_page)

    def _repr_html_(self) -> str:
        n = BY_KEY[self.key]
        title = f"{n.number} · {n.title} (recording)"
        return (f'<iframe class="kvviz-node" data-node="{html.escape(self.key)}" '
                f'title="{html.escape(title)}" style="width: 100%; height: {FRAME_HEIGHT}px; border: 0;" '
                f'srcdoc="{html.escape(frame_document(self.page, title))}"></iframe>')

    def save(self, path: str | Path) -> Path:
        """The played page as an HTML file of its own (it opens from disk, with no network)."""
        path = Path(path)
        path.write_text(self.page, encoding="utf-8")
        return path

    def __repr__(self) -> str:
        return f"<kvviz: node {self.key!r}, recorded ({len(self.page) / 1e6:.1f} MB page)>"
