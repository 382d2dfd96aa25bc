"""Browser-test fixtures: the app served by `panel serve` in a subprocess, and Debian's Chromium
driven by Playwright (pytest-playwright's `page` fixture, launched from /usr/bin/chromium: no
browser is ever downloaded).

    lesson_url      the base URL of a served app.py, e.g. http://localhost:PORT/app
    page            a fresh Playwright page (pytest-playwright), console errors collected in
                    page.kv_errors (console.error messages and uncaught page errors)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("KVVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/ui/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.ui)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lesson_url(tmp_path_factory):
    port = _free_port()
    panel = [sys.executable, "-m", "panel", "serve", "app.py", "--port", str(port),
             "--address", "127.0.0.1", "--allow-websocket-origin", f"localhost:{port}",
             "--allow-websocket-origin", f"127.0.0.1:{port}", "--num-procs", "1"]
    log = open(tmp_path_factory.mktemp("panel") / "serve.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(panel, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://localhost:{port}/app"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(url, timeout=30) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"panel serve did not start; see {log.name}") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture
def page(page):
    page.kv_errors = []
    page.on("console", lambda m: page.kv_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.kv_errors.append(str(e)))
    page.set_default_timeout(60_000)
    return page
