"""The sample notebook (docs/notebook.ipynb), executed as `jupyter nbconvert --execute --to html`
does (nbclient, then nbconvert's HTML exporter), on a kernel that imports this checkout's kvviz;
its static HTML opened in Chromium with the network cut: node 01's recorded numbers are there and
Free R2 plays, with no server and no request. (kvviz.node's parts: tests/lesson/test_notebook.py.)"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from playwright.sync_api import expect

from kvviz import formatting as fmt
from kvviz.nodes.fragmentation.state import FragmentationState

# (Panel's notebook extension also publishes an output with no data, which nbconvert says it skips)
pytestmark = [pytest.mark.ui, pytest.mark.filterwarnings("ignore:Your element with mimetype:UserWarning")]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "notebook.ipynb"
PANEL_VIEW = "application/vnd.holoviews_exec.v0+json"  # (Panel's output of a view a kernel keeps live)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The sample notebook executed (in its own folder, as Jupyter runs it; kvviz importable as
    `pip install -e .` makes it) and its HTML: (notebook, path of the HTML, the exporter)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # (a bound on a stuck cell, not a measure: the first recorded node may record the lesson)
    client = NotebookClient(nb, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    client.execute(env={**os.environ, "PYTHONPATH": path})
    exporter = HTMLExporter()
    body, _resources = exporter.from_notebook_node(nb)
    out = tmp_path_factory.mktemp("notebook") / "notebook.html"
    out.write_text(body, encoding="utf-8")
    return nb, out, exporter


def outputs(nb, source: str) -> list:
    [cell] = [c for c in nb.cells if c.cell_type == "code" and c.source == source]
    return cell.outputs


def test_the_notebook_runs_and_shows_node_01_recorded_and_node_02_live(executed):
    nb, _html, _exporter = executed
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    [recorded] = [o for o in outputs(nb, 'kvviz.node("fragmentation", recorded=True)')
                  if o.output_type == "execute_result"]
    assert recorded.data["text/html"].startswith('<iframe class="kvviz-node" data-node="fragmentation"')
    assert " srcdoc=" in recorded.data["text/html"]
    live = [o for o in outputs(nb, 'kvviz.node("paging")') if PANEL_VIEW in o.get("data", {})]
    assert live and "kv-notebook-paging" in live[-1].data["text/html"] + str(live[-1].get("metadata"))


@pytest.fixture
def offline(page):
    """The page, with the network cut: every request refused but the notebook's HTML file."""
    refused = []

    def route(r):
        if r.request.url.startswith("file:") and r.request.url.endswith("/notebook.html"):
            return r.continue_()
        refused.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    page.context.set_offline(True)
    page.kv_refused = refused
    return page


def test_its_static_html_plays_node_01_offline(offline, executed):
    _nb, path, exporter = executed
    page = offline
    page.goto(path.as_uri())
    frame = page.frame_locator('iframe[data-node="fragmentation"]')
    page.wait_for_function("""() => [...document.querySelectorAll('iframe[data-node="fragmentation"]')]
        .some((f) => f.contentDocument && f.contentDocument.documentElement.dataset.kvReadyFragmentation === '1')""")  # noqa: E501 (data: a string kept as written)

    def metric(label: str):
        return frame.locator(f'.kv-metric[data-label="{label}"] .kv-value')

    state = FragmentationState()  # (what the live engine shows: the recording's numbers are its)
    at_start = state.snapshot.metrics
    expect(metric("IN USE")).to_have_text(fmt.in_use(at_start))
    expect(metric("LARGEST GAP")).to_have_text(fmt.largest_gap(at_start))
    state.free_r2()
    freed = state.snapshot.metrics
    assert fmt.largest_gap(freed) != fmt.largest_gap(at_start)
    frame.get_by_role("button", name="Free R2").click()
    expect(metric("LARGEST GAP")).to_have_text(fmt.largest_gap(freed))
    expect(metric("IN USE")).to_have_text(fmt.in_use(freed))
    expect(frame.get_by_role("button", name="Free R2")).to_be_disabled()
    frame.get_by_role("button", name="Reset").click()
    expect(metric("LARGEST GAP")).to_have_text(fmt.largest_gap(at_start))
    expect(frame.locator("nav.kv-steps")).to_be_hidden()  # (the other nodes' pages are not in the notebook)
    # (the frame grew to its page's height: nothing of the node hidden behind a scroll bar)
    height = page.evaluate("document.querySelector('iframe[data-node=\"fragmentation\"]')"
                           ".getBoundingClientRect().height")
    inner = page.evaluate("""document.querySelector('iframe[data-node="fragmentation"]').contentDocument
        .querySelector('main').getBoundingClientRect().bottom""")
    assert height >= inner
    # Nothing of kvviz asked the network: only nbconvert's own page template links a CDN
    # (require.js, MathJax), which a course page may do as it likes (the browser says each failed).
    template = (exporter.require_js_url, re.sub(r"\?.*", "", exporter.mathjax_url))
    assert [u for u in page.kv_refused if not u.startswith(template)] == []
    assert [e for e in page.kv_errors if not e.startswith("Failed to load resource")] == []
