"""Browser-test fixtures: the app served by `panel serve` in a subprocess, and Debian's Chromium
driven by Playwright (pytest-playwright's `page` fixture, launched from /usr/bin/chromium: no
browser is ever downloaded).

    lesson_url      the base URL of a served app.py, e.g. http://localhost:PORT/app
    served          that server (tools.browser.Server): it also serves teacher.py (`base +
                    "teacher"`), with its class database in a temporary directory (`db`) and
                    the teacher's passphrase `teacher_key`
    page            a fresh Playwright page (pytest-playwright), console errors collected in
                    page.kv_errors (console.error messages and uncaught page errors)
"""

from __future__ import annotations

import os
import secrets

import pytest
from playwright.sync_api import expect

from tools.browser import CHROMIUM, CHROMIUM_ARGS, Server

# How long an `expect` waits for its condition before failing (Playwright's default: 5 s). An
# upper bound, not a wait: it passes as soon as the condition holds. A page's answers can take
# longer than 5 s where the machine's cores are shared (two test workers, other work).
expect.set_options(timeout=30_000)


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/ui/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.ui)


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    db = tmp_path_factory.mktemp("handins") / "class.db"
    key = f"test {secrets.token_hex(8)}"
    # (every test's browser is one address, 127.0.0.1, asking a class's worth of live questions: a
    # burst wider than a student's; the limit itself: tests/deploy/test_throttle.py,
    # tests/ui/test_slow_down.py)
    env = {"KVVIZ_DB": str(db), "KVVIZ_TEACHER_KEY": key, "KVVIZ_LIVE_BURST": "40",
           "KVVIZ_HANDIN_BURST": "200"}
    with Server(apps=("app.py", "teacher.py"), env=env) as server:
        server.db, server.teacher_key = db, key  # (its log's tail is in the error if it does not start)
        yield server


@pytest.fixture(scope="module")
def recorded(served):
    """The served lesson's address, once its recordings are made (the played-lesson tests)."""
    served.wait_for_recordings()
    return served.base


@pytest.fixture(scope="session")
def lesson_url(served):
    return served.url


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
