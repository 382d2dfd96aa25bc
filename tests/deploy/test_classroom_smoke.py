"""The class server (`make class`: deploy/class_server.py, nginx in front of one `panel serve` per
core) and its benchmark (`python -m benchmarks.classroom`).

Without a server: the harness's helpers (the nginx configuration: tests/deploy/test_nginx_limits.py;
Bokeh's framing: tests/deploy/test_bokeh_protocol.py; the status page:
tests/deploy/test_class_status.py). With one (slow; skipped with the reason when nginx cannot be
installed or run): four students' live pages through the proxy over Bokeh's protocol, a 4-student
smoke run of the benchmark with no timing thresholds, and a backend killed under the proxy.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import bokeh_protocol_support as bp
import pytest
from async_support import run_async

from benchmarks.classroom import report
from tools.browser import free_port
from tools.loopback_class import (
    ClassServer,
    answered_by,
    http_get,
    page_resources,
    read_state,
    source_address,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy"))
import class_nginx  # noqa: E402  (deploy/ is scripts, not a package)

sys.path.pop(0)


def test_the_reports_summaries_are_percentiles():
    assert report.summary([4.0, 1.0, 3.0, 2.0]) == {"n": 4, "p50": 2.5, "p95": 3.85, "max": 4.0}
    assert report.summary([0.25], scale=1000) == {"n": 1, "p50": 250.0, "p95": 250.0, "max": 250.0}
    assert report.summary([]) == {"n": 0}


def test_nginx_requests_during_the_probes_actions_are_their_address_in_their_windows(tmp_path):
    log = tmp_path / "access.log"
    line = ('{} [2026-12-02T05:00:{:02d}+00:00] "GET {} HTTP/1.1" 200 12 "-" "x" 0.001 upstream=- '
            'upstream_status=-')
    log.write_text("\n".join([
        line.format("127.0.0.1", 10, "/favicon.ico"),  # (during an action: counted)
        line.format("127.0.0.1", 11, "/lesson-class?since=ab"),  # (the class's channel: apart)
        line.format("127.1.0.5", 10, "/lesson/"),  # (a protocol student: not a probe)
        line.format("127.0.0.1", 30, "/lesson/static/x.js"),  # (outside every window)
        "not a log line"]))
    t = datetime.datetime(2026, 12, 2, 5, 0, 10, tzinfo=datetime.UTC).timestamp()
    found = report.nginx_during_actions(log, [{"acting_windows": [[t, t + 0.5]]}, {}])
    assert found == {"requests": 1, "seen": ["/favicon.ico"], "class_channel": 1, "windows": 1}
    assert report.nginx_during_actions(None, [])["log"] is None


def test_helpers_for_addresses_backends_and_page_resources():
    assert source_address(0) == "127.1.0.1" and source_address(250) == "127.1.1.1"
    assert answered_by("127.0.0.1:5101, 127.0.0.1:5100") == "127.0.0.1:5100"
    page = ('<script src="static/js/bokeh.min.js?v=1"></script><link rel="stylesheet" '
            'href="/assets/kvviz.css"><script src="https://cdn.example/x.js"></script><link rel="icon" '
            'href="data:image/svg+xml,%3Csvg%3E">')
    assert page_resources(page, "/app") == ["/static/js/bokeh.min.js?v=1", "/assets/kvviz.css"]


# -- a running class server ---------------------------------------------------------------------


def _nginx() -> str | None:
    found = class_nginx.find_nginx()
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["make", "-s", "nginx"], cwd=ROOT, capture_output=True, timeout=600)
        found = class_nginx.find_nginx()
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    nginx = _nginx()
    if nginx is None:
        pytest.skip("nginx is not installed and could not be (`make nginx` needs root and apt-get)")
    probe = subprocess.run([nginx, "-v"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"nginx does not run here: {probe.stderr.strip()[:200]}")
    port = free_port()
    with pytest.MonkeyPatch.context() as env:  # (the hand-ins' database: not in the checkout)
        env.setenv("KVVIZ_DB", str(tmp_path_factory.mktemp("class") / "class.db"))
        env.delenv("KVVIZ_TEACHER_KEY", raising=False)
        with ClassServer(port, backends=2, base_port=port + 1,
                           extra=["--session-lifetime-ms", "15000", "--check-sessions-ms", "1000"]) as s:
            state = read_state(port)
            yield s, port, state


ACCESS_RE = re.compile(r'^(\S+) \[[^\]]*\] "GET (\S+) [^"]*" \d{3} \d+ \S+ upstream=(\S+)')


async def live_student(port: int, source: str) -> dict:
    """A student's live page (/app) through the proxy from `source`, over Bokeh's protocol, as
    BokehJS opens it; then one step of node 01's Reserved length slider, until a card changes."""
    status, headers, body = await http_get("127.0.0.1", port, "/app", source, timeout=120)
    assert status == 200, status
    page = bp.Page(f"http://127.0.0.1:{port}/app")
    doc = await page.open(body.decode(), source=source, timeout=120)
    out = {"get_backend": answered_by(headers.get("x-kvviz-backend")), "cards": len(doc.metric_cards()),
           "ws_backend": answered_by(page.ws_headers.get("x-kvviz-backend")), "models": len(doc),
           "doc_bytes": page.reply.wire_bytes}
    await page.send([bp.document_ready()])
    (slider,) = doc.find("fragmentation", title="Reserved length", kinds=("Slider",))
    new = doc.attr(slider, "value") + (1 if doc.attr(slider, "value") < doc.attr(slider, "end") else -1)
    watched = {mid for mid, node in doc.watched().items() if node == "fragmentation"}
    before = {mid: doc.text(mid) for mid in watched}
    t0 = time.perf_counter()
    await page.send([bp.model_changed(slider, "value", new)])
    await page.send([bp.model_changed(slider, "value_throttled", new)])
    while not any(doc.text(mid) != before[mid] for mid in watched):
        message = await asyncio.wait_for(page.next(), 60)
        assert message.msgtype != "ERROR", message.content[:300]
        if message.msgtype == "PATCH-DOC":
            doc.apply(message.json()["events"])
    out["click_ms"] = 1000 * (time.perf_counter() - t0)
    await page.close()
    return out


async def live_students(port: int, sources: list[str]) -> list[dict]:
    return list(await asyncio.gather(*(live_student(port, src) for src in sources)))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_four_students_get_live_pages_built_once_and_their_clicks_change_the_page(server):
    """Each from its own address, twice (a page closed and opened again): a page with metric
    cards, built once (its GET and websocket on one backend, as nginx logged them), and a click
    that changes a card."""
    _s, port, state = server
    backends = {f"127.0.0.1:{b['port']}" for b in state["backends"]}
    sources = [source_address(200 + i) for i in range(4)]
    log = Path(state["access_log"])
    offset = log.stat().st_size
    for _round in range(2):
        got = run_async(live_students(port, sources))
        for s in got:
            assert s["cards"] > 0 and s["doc_bytes"] > 0 and s["models"] > 0, s
            assert s["get_backend"] in backends and s["ws_backend"] == s["get_backend"], s
            assert 0 < s["click_ms"] < 60_000, s
    # nginx logged a GET of /app and a websocket per page (the websocket when it closed), each
    # student's on one backend
    deadline = time.monotonic() + 30
    while True:
        with log.open(errors="replace") as f:
            f.seek(offset)
            lines = [m.groups() for m in map(ACCESS_RE.match, f.read().splitlines()) if m and m[1] in sources]
        if sum(1 for _c, path, _u in lines if path.startswith("/app/ws")) >= 8 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    gets = [(c, u.split(",")[-1].strip()) for c, path, u in lines if path.split("?")[0] in ("/app", "/app/")]
    sockets = [(c, u.split(",")[-1].strip()) for c, path, u in lines if path.startswith("/app/ws")]
    assert len(gets) == 8 and len(sockets) == 8, lines
    assert all(len({u for c2, u in gets + sockets if c2 == c}) == 1 for c in sources), lines


@pytest.mark.slow
def test_the_status_page_counts_the_sessions_of_every_backend(server):
    _s, port, state = server
    for i in range(3):
        _get_backend(port, source_address(40 + i))  # (pages whose websocket never comes)
    # (CPU % takes two readings of a backend's /metrics, SAMPLE_S apart, each within a second: a
    # backend busy building pages on a loaded machine can miss one, so the page may say none for
    # a few seconds; the conditions below are checked on the first report that has it for each)
    # (within 150 s: a backend building its lesson's frames at its start, on two cores that also
    # run the other test worker's servers and browsers, was seen to miss every reading for a minute)
    deadline = time.monotonic() + 150
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status.json", timeout=30) as r:
            report = json.loads(r.read())
        if all(b["cpu_percent"] is not None for b in report["backends"]) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert all(b["cpu_percent"] is not None for b in report["backends"]), report["backends"]
    assert [b["port"] for b in report["backends"]] == [b["port"] for b in state["backends"]]
    assert all(b["up"] for b in report["backends"]) and sum(b["pages_built"] for b in report["backends"]) >= 3
    # each backend's CPU and memory, from its own /metrics (prometheus_client's process collector)
    assert all(b["rss_mb"] > 50 and b["cpu_percent"] is not None and b["cpu_percent"] >= 0
               for b in report["backends"])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as r:
        assert "students connected" in r.read().decode()


@pytest.mark.slow
def test_past_the_page_build_limit_a_student_gets_the_busy_page_not_a_blank_one(server):
    _s, port, _state = server

    async def burst():
        return await asyncio.gather(*(http_get("127.0.0.1", port, "/app", source_address(60 + i),
                                                         timeout=120) for i in range(24)))

    answers = run_async(burst())
    statuses = [status for status, _h, _b in answers]
    assert set(statuses) <= {200, 503} and statuses.count(200) >= 1, statuses
    busy = [(h, b) for status, h, b in answers if status == 503]
    assert busy, "24 pages at once should pass the limit of 8 being built"
    headers, body = busy[0]
    assert "busy, retrying" in (body.decode() if isinstance(body, bytes) else body)
    assert headers.get("retry-after") == "3"


@pytest.mark.slow
def test_the_teacher_page_is_served_too_and_its_passphrase_printed(server):
    from kvviz.handin import key
    from kvviz.handin.storage import Store

    s, port, state = server
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/teacher", timeout=120) as r:
        assert r.status == 200 and "<title>Your class" in r.read().decode()
    generated = key.teacher_key(Store(state["db"]), {})  # made by the launcher, the same for every backend
    assert f"passphrase: {generated}" in s.log_tail(20_000) and "/teacher" in s.log_tail(20_000)


def _get_backend(port: int, source: str) -> tuple[int, str | None]:
    """(status, backend) of GET /app through the proxy from `source`."""
    status, headers, _body = run_async(http_get("127.0.0.1", port, "/app", source, timeout=120))
    return status, answered_by(headers.get("x-kvviz-backend"))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_backends_students_go_to_another_and_it_is_restarted(server):
    _s, port, state = server
    victim = state["backends"][1]
    sources = [source_address(i) for i in range(12)]
    # (a backend that was slow to answer an earlier request is left out by nginx for fail_timeout,
    # 10 s: its addresses land on the other meanwhile, so the split is read again past that)
    settled = time.monotonic() + 15
    while True:
        before = {src: _get_backend(port, src)[1] for src in sources}
        on_victim = [src for src, b in before.items() if b == f"127.0.0.1:{victim['port']}"]
        if on_victim or time.monotonic() > settled:
            break
        time.sleep(1)
    assert on_victim, f"no address of {sources} hashed to the victim backend: {before}"
    os.kill(victim["pid"], signal.SIGKILL)
    time.sleep(0.3)
    for src in on_victim[:2]:
        status, backend = _get_backend(port, src)
        assert status == 200 and backend == f"127.0.0.1:{state['backends'][0]['port']}"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        new = read_state(port)["backends"][1]
        if new["restarts"] >= 1 and new["pid"] != victim["pid"]:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{victim['port']}/app", timeout=120) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass  # not listening yet
        time.sleep(1)
    else:
        pytest.fail("the killed backend was not restarted")
    # and its students go back to it once nginx tries it again (fail_timeout after it failed)
    back = time.monotonic() + 120
    while _get_backend(port, on_victim[0])[1] != f"127.0.0.1:{victim['port']}":
        assert time.monotonic() < back, "nginx did not send the restarted backend's students back to it"
        time.sleep(1)


@pytest.mark.timeout(900)
def test_students_address_serves_the_recorded_lesson_from_disk(server):
    """/ sends a student to the recorded lesson once it is made (at the first start, in the
    background: until then to the live /app); nginx serves its files from disk, not a backend."""
    import json
    import time

    _s, port, _state = server
    deadline = time.monotonic() + 600
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lesson-status", timeout=30) as r:
            if json.loads(r.read())["ready"]:
                break
        assert time.monotonic() < deadline, "the recordings were not made in 10 minutes"
        time.sleep(2)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/?reserve=12", timeout=30) as r:
        assert r.url.endswith("/lesson/?reserve=12")
        assert "Recorded from this server" in r.read().decode()
        assert r.headers.get("X-Kvviz-Backend") is None  # (nginx read it from disk)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/lesson/static/js/bokeh.min.js", timeout=30) as r:
        assert r.status == 200 and r.headers.get("X-Kvviz-Backend") is None
    # compressed once, when recorded: nginx sends the .gz from disk (gzip_static)
    from kvviz.export import cache_folder

    made = cache_folder.cache_root() / cache_folder.key() / "static" / "js" / "bokeh.min.js.gz"
    ask = urllib.request.Request(f"http://127.0.0.1:{port}/lesson/static/js/bokeh.min.js",
                                 headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(ask, timeout=30) as r:
        assert r.headers.get("Content-Encoding") == "gzip" and r.read() == made.read_bytes()


@pytest.mark.timeout(900)
def test_students_spread_over_the_backends_each_stays_on_one_and_its_questions_run_on_either(server):
    """nginx keeps each student (client address) on one backend (consistent hashing: see
    deploy/README.md for the odds in a small group), both backends take a share of a class, and
    a student's own question (/lesson-live, what no recording holds) is run by a backend's engine,
    the one with the fewest answers in hand (tests/deploy/test_nginx_limits.py), and answered as a
    branch to play."""
    _s, port, _state = server
    deadline = time.monotonic() + 600
    while True:  # (the question needs the recording: made at the first start)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lesson-status", timeout=30) as r:
            if json.loads(r.read())["ready"]:
                break
        assert time.monotonic() < deadline, "the recordings were not made in 10 minutes"
        time.sleep(2)

    def backend(path: str, source: str) -> tuple[int, str | None, bytes]:
        status, headers, body = run_async(http_get("127.0.0.1", port, path, source, timeout=180))
        return status, answered_by(headers.get("x-kvviz-backend")), body

    sources = [source_address(100 + i) for i in range(40)]
    first = {src: backend("/lesson-status", src)[1] for src in sources}
    assert all(first.values())
    shares = {b: sum(1 for v in first.values() if v == b) for b in set(first.values())}
    assert len(shares) == 2 and min(shares.values()) >= 6, shares
    for src in sources[:8]:
        assert backend("/lesson-status", src)[1] == first[src]  # (each stays where it was)
    src = sources[0]
    status, by, body = backend("/lesson-live?node=radix&sharing=1&op=ask%3AWhat+is+a+slab%3F", src)
    answer = json.loads(body)
    assert status == 200 and answer["ok"] and by in shares  # (either: an answer needs no session)
    assert answer["rows"] and "op=ask%3AWhat+is+a+slab%3F" in answer["link"]
    # where its time went, for a browser's developer tools and benchmarks.classroom
    headers = run_async(http_get("127.0.0.1", port,
                                 "/lesson-live?node=radix&sharing=1&op=ask%3AWhat+is+a+slab%3F",
                                           src, timeout=180))[1]
    assert re.fullmatch(r"wait;dur=[\d.]+, compute;dur=[\d.]+", headers.get("server-timing", "")), headers


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_benchmark_plays_a_class_of_four_on_the_running_server(server, tmp_path):
    """`python -m benchmarks.classroom` with four students, one typing, no Chromium, a backend's
    pages loaded meanwhile, against the class server already running on its port: every part
    measured, nothing lost."""
    _s, port, state = server
    out_path = tmp_path / "classroom.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.classroom", "--port", str(port), "--students", "4",
         "--typers", "1", "--arrive-s", "2", "--probes", "0", "--handin-s", "1", "--probe-pages",
         "--json", str(out_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = json.loads(out_path.read_text())
    assert {"date", "config", "arrival", "live_question", "chromium", "handin", "server", "machine"} \
        <= set(out)
    assert out["server_started_here"] is False
    assert set(out["server"]["backends"]) == {f"127.0.0.1:{b['port']}" for b in state["backends"]}
    arrival = out["arrival"]
    assert arrival["n"] == 4 and arrival["failed"] == 0 and arrival["bytes_per_student"] > 0, arrival
    assert out["live_question"]["n"] == 1 and out["live_question"]["errors"] == [], out["live_question"]
    handin = out["handin"]
    assert (handin["stored"], handin["lost"], handin["doubled"], handin["failed"]) == (4, 0, 0, 0), handin
    mem = out["server"]["memory_mb"]
    assert mem["before"]["rss_mb"] > 0 and mem["after"]["rss_mb"] > 0
    pages = out["pages"]  # (the status at least every 0.1 s plus its answer, the live page every fifth)
    assert {p["path"] for p in pages} == {"/lesson-status", "/app"} and all(p["status"] == 200 for p in pages)
    assert "| ready page" in run.stdout and "| /app meanwhile" in run.stdout
