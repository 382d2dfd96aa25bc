"""The class server (`make class`: deploy/class_server.py, nginx in front of one `panel serve` per
core) and its benchmark (`python -m benchmarks.classroom`).

Without a server: Bokeh's wire framing and the messages the students send (checked against what
BokehJS sends, as captured from Chromium), reading a page's token and a document's models, the
nginx configuration. With one (slow; skipped with the reason when nginx cannot be installed or
run): a 4-student smoke run with no timing thresholds, and a backend killed under the proxy.
"""

from __future__ import annotations

import asyncio
import base64
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

import pytest
from async_support import run_async

from benchmarks import classroom, common
from benchmarks import classroom_protocol as bp
from benchmarks.classroom_server import StartedServer, read_state
from tools.browser import free_port

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "deploy"))
import class_server  # noqa: E402  (deploy/ is scripts, not a package)

sys.path.pop(0)


# -- framing, without a server ------------------------------------------------------------------
def test_a_message_is_header_metadata_content_as_bokehjs_writes_them():
    msgid, frames = bp.patch_doc([bp.button_click("p2890")])
    assert len(msgid) == 32 and msgid == msgid.upper()
    assert frames[0] == f'{{"msgid":"{msgid}","msgtype":"PATCH-DOC"}}'
    assert frames[1] == "{}"
    # byte for byte what BokehJS 3.9 sent for a click on "Add request" (captured in Chromium)
    assert frames[2] == ('{"events":[{"kind":"MessageSent","msg_type":"bokeh_event","msg_data":{"type":"event",'
                         '"name":"button_click","values":{"type":"map","entries":[["model",{"id":"p2890"}]]}}}]}')
    assert json.dumps(bp.model_changed("p3354", "active", True), separators=(",", ":")) == \
        '{"kind":"ModelChanged","model":{"id":"p3354"},"attr":"active","new":true}'
    assert json.dumps(bp.document_ready(), separators=(",", ":")) == (
        '{"kind":"MessageSent","msg_type":"bokeh_event","msg_data":{"type":"event","name":"document_ready",'
        '"values":{"type":"map"}}}')
    _id, frames = bp.pull_doc_req()
    assert json.loads(frames[0])["msgtype"] == "PULL-DOC-REQ" and frames[1:] == ["{}", "{}"]


def test_assembler_joins_frames_and_buffers_into_messages():
    a = bp.Assembler()
    header = json.dumps({"msgid": "p1", "msgtype": "PULL-DOC-REPLY", "reqid": "X", "num_buffers": 2})
    frames = [header, "{}", '{"doc": {}}', '{"id": "p2"}', b"\x00" * 8, '{"id": "p3"}', b"\x01" * 4]
    got = [a.feed(f) for f in frames]
    assert got[:-1] == [None] * 6
    msg = got[-1]
    assert msg.msgtype == "PULL-DOC-REPLY" and msg.json() == {"doc": {}} and msg.buffers == [b"\x00" * 8, b"\x01" * 4]
    assert msg.wire_bytes == sum(len(f) if isinstance(f, bytes) else len(f.encode()) for f in frames)
    # the next message starts afresh; one without buffers is complete at its content
    ok = [a.feed(f) for f in ('{"msgid": "p4", "msgtype": "OK", "reqid": "Y"}', "{}", "{}")]
    assert ok[:2] == [None, None] and ok[2].msgtype == "OK" and ok[2].header["reqid"] == "Y"


def test_assembler_refuses_what_is_not_a_message():
    with pytest.raises(bp.ProtocolError):
        bp.Assembler().feed(b"binary first")
    a = bp.Assembler()
    a.feed('{"nomsgid": 1}')
    a.feed("{}")
    with pytest.raises(bp.ProtocolError):
        a.feed("{}")
    a = bp.Assembler()
    for f in ('{"msgid": "p1", "msgtype": "PATCH-DOC", "num_buffers": 1}', "{}", "{}"):
        a.feed(f)
    with pytest.raises(bp.ProtocolError):
        a.feed(b"payload before its buffer header")


def test_session_token_and_id_are_read_from_the_page():
    payload = base64.urlsafe_b64encode(json.dumps({"session_id": "abc123", "session_expiry": 1}).encode())
    token = payload.decode().rstrip("=")
    page = f'<script>const render_items = [{{"token":"{token}","use_for_title":false}}];</script>'
    assert bp.session_token(page) == (token, "abc123")
    with pytest.raises(LookupError):
        bp.session_token("<html>no bokeh here</html>")


def _doc() -> dict:
    """A document shaped as Panel sends the lesson's: node sections (kv-node-<key>) holding a
    button, a checkbox or a slider, a step counter and a metric card (HTML escaped, as Panel
    sends it); a navigation pane naming every node sits outside them."""
    def obj(mid, name, **attrs):
        return {"type": "object", "name": name, "id": mid, "attributes": attrs}

    def card(mid, node, label, value):
        return obj(mid, "panel.models.markup.HTML", text=(
            f'&lt;div class=&quot;kv-metric&quot; data-node=&quot;{node}&quot; data-label=&quot;{label}&quot;&gt;'
            f'&lt;div class=&quot;kv-value&quot;&gt;{value}&lt;/div&gt;&lt;/div&gt;'))

    def counter(mid, node, step, status):
        return obj(mid, "panel.models.markup.HTML",
                   text=f"&lt;span class=&quot;kv-step&quot; data-node=&quot;{node}&quot;&gt;step &lt;b&gt;{step}"
                        f"&lt;/b&gt; · {status}&lt;/span&gt;")

    paging = obj("p10", "Column", css_classes=["kv-node", "kv-node-paging"], children=[
        obj("p11", "panel.models.widgets.Button", label="Add request", disabled=False),
        obj("p12", "panel.models.widgets.Button", label="▶ Play"),
        counter("p13", "paging", 18, "idle"), card("p14", "paging", "PAGED", "40% full"),
        obj("p15", "panel.models.markup.HTML", text='&lt;div class=&quot;kv-notice kv-empty&quot;&gt;&lt;/div&gt;')])
    radix = obj("p20", "Column", css_classes=["kv-node", "kv-node-radix"], children=[
        obj("p21", "panel.models.widgets.Button", label="Add request"),
        obj("p22", "Checkbox", label="Prefix sharing", active=False), card("p23", "radix", "SAVED", "0%")])
    frag = obj("p30", "Column", css_classes=["kv-node", "kv-node-fragmentation"], children=[
        obj("p31", "Slider", title="Reserved length (blocks)", value=8, start=1, end=12)])
    nav = obj("p40", "panel.models.markup.HTML", text='&lt;a data-node=&quot;paging&quot;&gt;&lt;a data-node=&quot;radix&quot;&gt;')
    return {"roots": [obj("p1", "Column", children=[nav, paging, radix, frag, {"id": "p11"}])]}


def test_doc_index_finds_each_nodes_widgets_and_texts():
    d = bp.DocIndex(_doc())
    assert d.find("paging", label="Add request", kinds=("Button",)) == ["p11"]
    assert d.find("radix", label="Add request", kinds=("Button",)) == ["p21"]
    assert d.find("radix", label="Prefix sharing", kinds=("Checkbox",)) == ["p22"]
    assert d.find("fragmentation", title="Reserved length", kinds=("Slider",)) == ["p31"]
    assert d.watched() == {"p13": "paging", "p14": "paging", "p15": "paging", "p23": "radix"}
    assert d.metric_cards() == {("paging", "PAGED"): "40% full", ("radix", "SAVED"): "0%"}
    assert bp.parse_step(d.text("p13")) == (18, "idle")


def test_doc_index_follows_the_servers_patches():
    d = bp.DocIndex(_doc())
    changes = d.apply([
        {"kind": "ModelChanged", "model": {"id": "p13"}, "attr": "text",
         "new": "&lt;span class=&quot;kv-step&quot; data-node=&quot;paging&quot;&gt;step &lt;b&gt;19&lt;/b&gt; · playing&lt;/span&gt;"},
        {"kind": "ModelChanged", "model": {"id": "p10"}, "attr": "children",
         "new": [{"id": "p11"}, {"type": "object", "name": "panel.models.widgets.Button", "id": "p16",
                                 "attributes": {"label": "Release oldest"}}]},
        {"kind": "ColumnsStreamed", "model": {"id": "p99"}},
    ])
    assert [(m, a) for m, a, _ in changes] == [("p13", "text"), ("p10", "children")]
    assert bp.parse_step(d.text("p13")) == (19, "playing")
    assert d.find("paging", label="Release oldest") == ["p16"]


def test_play_pace_counts_steps_while_playing():
    obs = [(0.0, 18, "idle"), (1.0, 0, "playing"), (2.0, 4, "playing"), (3.0, 8, "playing"), (3.5, 10, "idle"),
           (9.0, 10, "idle")]
    rate, seconds = classroom.steps_per_10s(obs)
    assert seconds == pytest.approx(2.5) and rate == pytest.approx(40.0)
    # only within one look at the node: off screen (None), or across a look away, is not counted
    seen = [(1.0, 0, "playing", 1), (2.0, 4, "playing", 1), (3.0, 5, "playing", None), (9.0, 6, "playing", 3),
            (10.0, 10, "playing", 3)]
    rate, seconds = classroom.steps_per_10s(seen)
    assert seconds == pytest.approx(2.0) and rate == pytest.approx(40.0)
    assert common.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5


def test_helpers_for_addresses_backends_and_page_resources():
    assert classroom.source_address(0) == "127.1.0.1" and classroom.source_address(250) == "127.1.1.1"
    assert classroom.answered_by("127.0.0.1:5101, 127.0.0.1:5100") == "127.0.0.1:5100"
    page = ('<script src="static/js/bokeh.min.js?v=1"></script><link rel="stylesheet" href="/assets/kvviz.css">'
            '<script src="https://cdn.example/x.js"></script><link rel="icon" href="data:image/svg+xml,%3Csvg%3E">')
    assert classroom.page_resources(page, "/app") == ["/static/js/bokeh.min.js?v=1", "/assets/kvviz.css"]
    with pytest.raises(SystemExit):
        classroom.check_loopback("http://192.0.2.1:5006/app")


def test_nginx_config_keeps_students_on_one_backend_and_passes_websockets(tmp_path):
    main, proxy = class_server.nginx_config(tmp_path, "0.0.0.0", 5006, [5100, 5101], ROOT)
    assert "@@" not in main + proxy
    assert "hash $remote_addr consistent;" in main
    assert "server 127.0.0.1:5100 max_fails=1 fail_timeout=10s;" in main and "127.0.0.1:5101" in main
    assert "listen 0.0.0.0:5006;" in main and f"pid {tmp_path}/nginx.pid;" in main
    for line in ("proxy_http_version 1.1;", "proxy_set_header Upgrade $http_upgrade;",
                 "proxy_set_header Connection $connection_upgrade;", "proxy_next_upstream error timeout",
                 "proxy_next_upstream_tries 2;"):
        assert line in proxy
    # a backend's busy 503 is the student's answer, not a failure that moves its students away
    assert "http_503" not in next(ln for ln in proxy.splitlines() if ln.startswith("proxy_next_upstream "))
    # the recorded lesson: read from disk by nginx, made by the backends (their routes plugin)
    assert "location /lesson/ {" in main and str(class_server.recordings_dir()) in main
    cmd = class_server.backend_command(5100, ["*"], 60000, 2000)
    assert cmd[cmd.index("--plugins") + 1] == "kvviz.serve.routes"
    assert cmd[cmd.index("--unused-session-lifetime") + 1] == "60000" and "--num-procs" in cmd
    assert cmd[cmd.index("serve") + 1:cmd.index("--port")] == ["app.py", "teacher.py"]  # /app and /teacher
    assert cmd[cmd.index("--allow-websocket-origin") + 1] == "*"
    assert class_server.split_origins("a:1, b:2  c") == ["a:1", "b:2", "c"]


def test_nginx_config_shows_a_busy_page_past_the_page_build_limit_and_routes_the_status_page(tmp_path):
    main, _proxy = class_server.nginx_config(tmp_path, "0.0.0.0", 5006, [5100, 5101], ROOT, status_port=5999)
    app = main[main.index("location = /app {"):]
    app = app[: app.index("}")]
    assert f"limit_conn kvviz_pages {2 * class_server.PAGE_BUILDS_PER_BACKEND};" in app
    assert "limit_conn_status 503;" in app and "error_page 502 503 504 /kvviz-busy.html;" in app
    assert f"alias {ROOT}/deploy/busy.html;" in main and "proxy_pass http://127.0.0.1:5999;" in main
    busy = (ROOT / "deploy" / "busy.html").read_text()
    assert "The class server is busy, retrying" in busy and "location.reload()" in busy


def test_the_status_page_reports_each_backend_in_numbers_only(monkeypatch):
    import class_status

    class Proc:
        def poll(self):
            return None

    class FakeBackend:
        index, port, metrics_port, restarts, proc = 0, 5100, 1, 2, Proc()

    cpu_seconds, now = [10.0], [100.0]
    monkeypatch.setattr(class_status, "scrape", lambda port: {
        "kvviz_sessions": 3.0, "kvviz_pages_built": 7.0, "kvviz_nodes_built": 4.0, "kvviz_memo_states": 90.0,
        "kvviz_memo_hits": 30.0, "kvviz_memo_misses": 10.0, "process_cpu_seconds": cpu_seconds[0],
        "process_resident_memory_bytes": 300 * 2**20, "process_start_time_seconds": 1.7e9})
    status = class_status.Status([FakeBackend()], clock=lambda: now[0])
    status.sample()
    assert status.report()["backends"][0]["cpu_percent"] is None  # (one reading: no rate yet)
    cpu_seconds[0], now[0] = 10.5, 102.0
    status.sample()
    report = status.report()
    (row,) = report["backends"]
    assert report["sessions"] == 3 and row["up"] and row["restarts"] == 2 and row["pages_built"] == 7
    assert row["memo_hit_rate"] == 0.75 and row["rss_mb"] == 300.0 and row["cpu_percent"] == 25.0
    page = class_status.page(report)
    assert "<b>3</b> students connected" in page and "75%" in page and "25.0" in page


def test_the_status_page_reads_prometheus_text_with_its_parser():
    import class_status
    from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

    registry = CollectorRegistry()
    Counter("kvviz_pages_built", "Pages", registry=registry).inc(7)
    nodes = Counter("kvviz_nodes_built", "Nodes", ["node"], registry=registry)
    nodes.labels("radix").inc(2)
    nodes.labels("paging").inc(3)
    Gauge("process_resident_memory_bytes", "RSS", registry=registry).set(100 * 2**20)
    # (counters summed over their labels; their creation times, `_created`, left out)
    assert class_status.parse(generate_latest(registry).decode()) == {
        "kvviz_pages_built": 7.0, "kvviz_nodes_built": 5.0, "process_resident_memory_bytes": 100 * 2**20}


def test_a_backends_own_metrics_hold_its_cpu_and_memory():
    """What the status page reads from a backend: prometheus_client's process collector, beside
    the lesson's counts (kvviz/process/metrics.py), from the same registry."""
    import class_status
    from prometheus_client import REGISTRY, generate_latest

    from kvviz.process import metrics  # noqa: F401  (the lesson's metrics, registered)

    m = class_status.parse(generate_latest(REGISTRY).decode())
    assert m["process_cpu_seconds"] > 0 and m["process_resident_memory_bytes"] > 10 * 2**20
    assert m["process_start_time_seconds"] > 0 and "kvviz_sessions" in m


# -- a running class server ---------------------------------------------------------------------


def _nginx() -> str | None:
    found = class_server.find_nginx()
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["make", "-s", "nginx"], cwd=ROOT, capture_output=True, timeout=600)
        found = class_server.find_nginx()
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
        with StartedServer(port, backends=2, base_port=port + 1,
                           extra=["--session-lifetime-ms", "15000", "--check-sessions-ms", "1000"]) as s:
            state = read_state(port)
            yield s, port, state


SMOKE_KEYS = {"date", "url", "config", "open", "act", "leave", "cycles", "server", "probes", "students", "client",
              "machine"}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_four_students_get_pages_and_their_clicks_change_the_page(server, tmp_path):
    _s, port, state = server
    out_path = tmp_path / "classroom.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.classroom", "--url", f"http://127.0.0.1:{port}/app", "--students", "4",
         "--open-seconds", "2", "--act-seconds", "6", "--cycles", "4", "--probes", "0", "--settle-seconds", "3",
         "--json", str(out_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = json.loads(out_path.read_text())
    assert set(out) >= SMOKE_KEYS
    backends = {f"127.0.0.1:{b['port']}" for b in state["backends"]}
    assert set(out["config"]["backends"]) == backends

    # every student got a page with metric cards, built once: its GET and websocket on one backend
    assert out["open"]["failed"] == 0 and out["open"]["with_cards"] == 4, out["open"]["errors"]
    assert len(out["students"]) == 4
    for s in out["students"]:
        assert s["error"] is None and s["cards"] > 0 and s["doc_bytes"] > 0 and s["models"] > 0, s
        assert s["get_backend"] in backends and s["ws_backend"] == s["get_backend"], s
    assert out["open"]["built_twice"] == 0 and out["cycles"]["built_twice"] == 0
    assert out["cycles"]["n"] == 4 and out["cycles"]["failed"] == 0, out["cycles"]["errors"]

    # clicks produced patches that changed the page's texts
    act = out["act"]
    assert act["actions"] >= 4 and act["errors"] == 0 and act["unchanged"] == 0, act
    assert act["latency_ms_all"]["n"] == act["actions"]
    assert all(s["changed"] == s["actions"] for s in out["students"])

    # the server side was measured, and nginx logged a GET and a websocket per page on one backend
    mem = out["server"]["memory_mb"]
    assert mem["all_open"]["rss_mb"] > 0 and mem["after_cycles_settled"]["rss_mb"] > 0
    log = out["server"]["access_log"]
    assert sum(v["get"] for v in log["per_backend"].values()) == 4 + 4
    assert log["clients_split"] == []
    assert "| time to a ready page" in run.stdout


@pytest.mark.slow
def test_the_status_page_counts_the_sessions_of_every_backend(server):
    _s, port, state = server
    for i in range(3):
        _get_backend(port, classroom.source_address(40 + i))  # (pages whose websocket never comes)
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
    assert all(b["rss_mb"] > 50 and b["cpu_percent"] is not None and b["cpu_percent"] >= 0 for b in report["backends"])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as r:
        assert "students connected" in r.read().decode()


@pytest.mark.slow
def test_past_the_page_build_limit_a_student_gets_the_busy_page_not_a_blank_one(server):
    _s, port, _state = server

    async def burst():
        return await asyncio.gather(*(classroom.http_get("127.0.0.1", port, "/app", classroom.source_address(60 + i),
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
    status, headers, _body = run_async(classroom.http_get("127.0.0.1", port, "/app", source, timeout=120))
    return status, classroom.answered_by(headers.get("x-kvviz-backend"))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_backends_students_go_to_another_and_it_is_restarted(server):
    _s, port, state = server
    victim = state["backends"][1]
    sources = [classroom.source_address(i) for i in range(12)]
    before = {src: _get_backend(port, src)[1] for src in sources}
    on_victim = [src for src, b in before.items() if b == f"127.0.0.1:{victim['port']}"]
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
def test_students_spread_over_the_backends_each_stays_on_one_and_its_questions_run_there(server):
    """nginx keeps each student (client address) on one backend (consistent hashing: see
    deploy/README.md for the odds in a small group), both backends take a share of a class, and
    a student's own question (/lesson-live, what no recording holds) is run by that backend's
    engine and answered as a branch to play."""
    _s, port, _state = server
    deadline = time.monotonic() + 600
    while True:  # (the question needs the recording: made at the first start)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lesson-status", timeout=30) as r:
            if json.loads(r.read())["ready"]:
                break
        assert time.monotonic() < deadline, "the recordings were not made in 10 minutes"
        time.sleep(2)

    def backend(path: str, source: str) -> tuple[int, str | None, bytes]:
        status, headers, body = run_async(classroom.http_get("127.0.0.1", port, path, source, timeout=180))
        return status, classroom.answered_by(headers.get("x-kvviz-backend")), body

    sources = [classroom.source_address(100 + i) for i in range(40)]
    first = {src: backend("/lesson-status", src)[1] for src in sources}
    assert all(first.values())
    shares = {b: sum(1 for v in first.values() if v == b) for b in set(first.values())}
    assert len(shares) == 2 and min(shares.values()) >= 6, shares
    for src in sources[:8]:
        assert backend("/lesson-status", src)[1] == first[src]  # (each stays where it was)
    src = sources[0]
    status, by, body = backend("/lesson-live?node=radix&sharing=1&op=ask%3AWhat+is+a+slab%3F", src)
    answer = json.loads(body)
    assert status == 200 and answer["ok"] and by == first[src]
    assert answer["rows"] and "op=ask%3AWhat+is+a+slab%3F" in answer["link"]
    # where its time went, for a browser's developer tools and benchmarks.classroom_played
    headers = run_async(classroom.http_get("127.0.0.1", port, "/lesson-live?node=radix&sharing=1&op=ask%3AWhat+is+a+slab%3F",
                                           src, timeout=180))[1]
    assert re.fullmatch(r"wait;dur=[\d.]+, compute;dur=[\d.]+", headers.get("server-timing", "")), headers
