"""`panel serve app.py` with no other flag (the README's simplest start) serves the styled lesson:
its stylesheets come through Panel's own /components/ route (stylesheets.py), not --static-dirs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from kvviz.lesson import STYLESHEET_URL
from kvviz.web import stylesheet
from tools.browser import ROOT, free_port

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """`panel serve app.py teacher.py --port P` (the port only: several tests run at once), its /app URL."""
    port, folder = free_port(), tmp_path_factory.mktemp("plain")
    log = folder / "serve.log"
    env = {**os.environ, "KVVIZ_DB": str(folder / "class.db"), "KVVIZ_TEACHER_KEY": "plain serve"}
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "panel", "serve", "app.py", "teacher.py", "--port",
                                 str(port)],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        base = f"http://localhost:{port}/"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(base + "app", timeout=30) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize("relative", stylesheet.STYLESHEETS)
def test_each_stylesheet_is_served_by_panel(plain, relative):
    with urllib.request.urlopen(plain + stylesheet.url(relative), timeout=30) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/css")
        assert r.read() == (ROOT / relative).read_bytes()


def test_only_the_listed_files_are_served_there(plain):
    for path in ("app.py", "assets/model.json", "../app.py"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(plain + stylesheet.ROUTE + path, timeout=30)
        assert refused.value.code in (403, 404)


def test_the_page_links_the_stylesheet_and_is_styled(page, plain):
    answers = {}
    page.on("response",
            lambda r: answers.setdefault(r.url.split("?")[0], r.status) if ".css" in r.url else None)
    page.goto(plain + "app?node=fragmentation")
    value = page.locator('.kv-metric[data-label="IN USE"] .kv-value')
    expect(value).to_have_text("12 / 32 · 38%")
    # kvviz.css's own rule for a card's value, in the shadow root it is linked into
    expect(value).to_have_css("font-variant-numeric", "tabular-nums")
    expect(value).to_have_css("font-weight", "700")
    assert answers[plain + STYLESHEET_URL.split("?")[0]] == 200
    assert [u for u, status in answers.items() if status != 200] == []
    assert page.kv_errors == []


def test_the_teacher_page_is_styled_too(page, plain):
    answers = {}
    page.on("response",
            lambda r: answers.setdefault(r.url.split("?")[0], r.status) if ".css" in r.url else None)
    page.goto(plain + "teacher")
    expect(page.get_by_label("Teacher passphrase")).to_be_visible()
    assert answers[plain + stylesheet.url("assets/handin.css").split("?")[0]] == 200
    assert [u for u, status in answers.items() if status != 200] == []
