"""`/` and its links (kvviz/serve/routes.py `LessonRoot`): the recorded lesson when it is there,
a node's page for `?node=`, Explain it back on the whole lesson's page; the live /app before."""

from __future__ import annotations

import pytest
from async_support import fetch_all


@pytest.fixture
def routes(tmp_path, monkeypatch):
    monkeypatch.setenv("KVVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("KVVIZ_RECORDINGS", "off")
    from kvviz.serve import routes as module

    return module


def where(routes, path: str) -> str:
    [answer] = fetch_all(routes.ROUTES, [("GET", path, {})])
    assert answer.code == 302, answer.code
    return answer.headers["Location"]


def test_before_the_recording_every_link_opens_the_live_lesson(routes):
    assert where(routes, "/?node=explain&reserve=12") == "app?node=explain&reserve=12"
    assert where(routes, "/") == "app"


def test_with_the_recording_a_link_opens_its_recorded_page_and_explain_it_back_the_whole_lesson(routes,
                                                                                                tmp_path):
    folder = tmp_path / "recordings" / routes.cache_folder.served_key()
    folder.mkdir(parents=True)
    for name in ("index", "fragmentation", "paging", "radix"):
        (folder / f"{name}.html").write_text("<html></html>")
    assert where(routes, "/") == "lesson/"
    assert where(routes, "/?node=paging&paging_adds=2") == "lesson/paging.html?node=paging&paging_adds=2"
    assert where(routes, "/?node=explain&reserve=12") == "lesson/?reserve=12#explain"
    assert where(routes, "/?node=explain") == "lesson/#explain"
    assert where(routes, "/?node=vllm") == "app?node=vllm"  # (node 04 watches a live vLLM: /app)


def test_importing_the_routes_starts_nothing(tmp_path):
    """No recording, no thread, no hashing of the sources at import: `start()` (Panel's --setup
    on_start.py, or the first request) does that."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    check = ("import threading, kvviz.serve.routes as r, kvviz.export.cache_folder as c; "
             "assert r.RECORDER == [], r.RECORDER; "
             "assert not any(t.name == 'kvviz-live-warm' for t in threading.enumerate()); "
             "assert c.served_key.cache_info().currsize == 0; print('quiet')")
    env = {k: v for k, v in os.environ.items() if k != "KVVIZ_RECORDINGS"} | {"KVVIZ_CACHE": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", check], cwd=Path(__file__).resolve().parents[2], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "quiet" in done.stdout, done.stderr[-2000:]
    assert not (tmp_path / "recordings").exists()
