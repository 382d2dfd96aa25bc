"""kvviz.node in a notebook (kvviz/notebook.py): `import kvviz` stays light, a bad key is said
plainly, a live node answers on this process's engine, a recorded node is one self-contained page
(kvviz/export/standalone.py) in an iframe's srcdoc. The sample notebook, executed and played
offline in Chromium: tests/ui/test_notebook_played.py."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import kvviz
from kvviz.export.standalone import standalone
from kvviz.notebook import Played, recordable

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "notebook.ipynb"


def test_importing_kvviz_imports_neither_panel_nor_the_notebook_module():
    code = (
        "import sys, kvviz; print(callable(kvviz.node), 'panel' in sys.modules, 'kvviz.notebook' in "
        "sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "False", "False"], done.stderr[-2000:]


@pytest.mark.parametrize("key, recorded, said", [
    ("pagin", False, "no live node 'pagin'"),
    ("pagin", True, "no recorded node 'pagin'"),
    ("explain", False, "'explain' has no live view: try recorded=True"),
    (2, False, "no live node 2"),
])
def test_an_unknown_node_is_refused_naming_the_nodes_there_are(key, recorded, said):
    with pytest.raises(ValueError) as caught:
        kvviz.node(key, recorded=recorded)
    message = str(caught.value)
    assert said in message
    for k in ("fragmentation", "paging", "radix"):
        assert repr(k) in message
    assert ("'explain'" in message.split("nodes are")[1]) == recorded


def test_every_node_with_a_page_in_the_static_site_can_be_shown_recorded():
    assert recordable()[:3] == ("fragmentation", "paging", "radix") and recordable()[-1] == "explain"


# The live node in a process of its own (Panel's configuration is the process's: a notebook's kernel).
LIVE = """
import json, kvviz, panel as pn
column = kvviz.node("fragmentation")
def card(label):
    [text] = [p.object for p in column.select(pn.pane.HTML) if f'data-label="{label}"' in str(p.object)]
    return text.split('<div class="kv-value">')[1].split("</div>")[0]
before = card("LARGEST GAP"), card("IN USE")
[free] = [b for b in column.select(pn.widgets.Button) if b.label == "Free R2"]
free.clicks += 1
after = card("LARGEST GAP"), card("IN USE")
styled = any(".kv-metric" in css for css in pn.config.raw_css)
again = kvviz.node("paging")
from kvviz.controls.step_links import StepLinks
links = [s.items_html for s in column.select(StepLinks)]
print(json.dumps({"type": type(column).__name__, "before": before, "after": after, "styled": styled,
                  "paging": "kv-notebook-paging" in again.css_classes, "css": len(pn.config.raw_css),
                  "links": links}))
"""


def test_a_live_node_answers_its_clicks_on_this_processs_engine(frag):
    done = subprocess.run([sys.executable, "-c", LIVE], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    frag.free_r2()  # (the same action on the node's state here: the numbers the engine gives)
    m = frag.snapshot.metrics
    from kvviz import formatting as fmt

    assert out["type"] == "Column" and out["paging"]
    assert out["before"] != out["after"]
    assert out["after"] == [fmt.largest_gap(m), fmt.in_use(m)]
    assert out["styled"] and out["css"] == 1  # (the lesson's stylesheet, added once per process)
    assert out["links"] == [""]  # (no back and continue links: the other nodes' pages are not in a notebook)


def test_a_page_made_whole_holds_every_file_it_linked(tmp_path):
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "js" / "lib.js").write_text('var s = "</script><b>";', encoding="utf-8")
    (tmp_path / "kvviz.css").write_text("b { color: red }", encoding="utf-8")
    (tmp_path / "shadow.css").write_text(".x { margin: 0 }", encoding="utf-8")
    page = tmp_path / "node.html"
    page.write_text(
        '<html><head><link rel="stylesheet" href="kvviz.css?v=1" type="text/css" />'
        '<link rel="preload" as="style" href="shadow.css?v=2">'
        '<script type="text/javascript" src="./static/js/lib.js"></script></head>'
        '<body><script type="application/json">{"url":"shadow.css?v=2"}</script></body></html>',
        encoding="utf-8")
    whole = standalone(page)
    assert re.findall(r'(?:src|href)="', whole) == []
    assert '<script type="text/javascript">var s = "<\\/script><b>";</script>' in whole
    assert "<style>b { color: red }</style>" in whole
    url = re.search(r'"url":"data:text/css;base64,([^"]+)"', whole)
    assert url and base64.b64decode(url.group(1)) == b".x { margin: 0 }"


def test_a_page_linking_a_file_outside_its_folder_or_missing_is_refused(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "secret.js").write_text("1", encoding="utf-8")
    for ref in ("../secret.js", "static/js/none.js"):
        page = tmp_path / "site" / "node.html"
        page.write_text(f'<script type="text/javascript" src="{ref}"></script>', encoding="utf-8")
        with pytest.raises(FileNotFoundError, match=re.escape(ref)):
            standalone(page)


def test_a_recorded_node_is_its_page_gzipped_in_an_iframes_srcdoc(tmp_path, hostile):
    page = f'<html><body><p title="a &amp; b">{hostile}</p>{"<p>the same again</p>" * 2000}</body></html>'
    shown = Played("fragmentation", page)._repr_html_()
    assert shown.startswith("<iframe ") and shown.count("<") == 2  # (the document inside is all escaped)
    assert 'title="01 · Fragmentation (recording)"' in shown
    document = html.unescape(re.search(r'srcdoc="([^"]*)"', shown).group(1))
    packed = re.search(r'<script type="application/octet-stream" id="kvviz-page">([A-Za-z0-9+/=]+)</script>',
                       document)
    assert gzip.decompress(base64.b64decode(packed.group(1))).decode("utf-8") == page
    assert len(shown) < len(page) / 4  # (unpacked by the browser: DecompressionStream)
    assert "DecompressionStream" in document and "document.write(page)" in document
    assert Played("fragmentation", page).save(tmp_path / "p.html").read_text(encoding="utf-8") == page


def test_the_sample_notebook_is_stored_without_outputs_and_shows_node_01_recorded_and_02_live():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    sources = [c.source for c in code]
    assert 'kvviz.node("fragmentation", recorded=True)' in sources and 'kvviz.node("paging")' in sources
