"""`make class`'s nginx configuration (deploy/nginx.conf.template, deploy/class_nginx.py): each student
kept on one backend, websockets passed, a busy page past the page builds, the status page routed;
and its limits on each address's live questions and hand-ins (request_limits): rendered from
kvviz/process/throttle.py's limits, accepted by `nginx -t`, and, run in front of a stand-in backend,
answering 429 with the page's sentence and `Retry-After` without passing the refused request on."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kvviz.process import throttle
from tools.browser import free_port

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy"))
import class_backends  # noqa: E402  (deploy/ is scripts, not a package)
import class_network  # noqa: E402
import class_nginx  # noqa: E402

sys.path.pop(0)
NGINX = class_nginx.find_nginx()
needs_nginx = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (make class installs it)")


def test_nginx_config_keeps_students_on_one_backend_and_passes_websockets(tmp_path):
    main, proxy = class_nginx.nginx_config(tmp_path, "0.0.0.0", 5006, [5100, 5101], ROOT)
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
    assert "location /lesson/ {" in main and str(class_nginx.recordings_dir()) in main
    cmd = class_backends.backend_command(5100, ["*"], 60000, 2000)
    assert cmd[cmd.index("--plugins") + 1] == "kvviz.serve.routes"
    assert cmd[cmd.index("--unused-session-lifetime") + 1] == "60000" and "--num-procs" in cmd
    assert cmd[cmd.index("serve") + 1:cmd.index("--port")] == ["app.py", "teacher.py"]  # /app and /teacher
    assert cmd[cmd.index("--allow-websocket-origin") + 1] == "*"
    assert class_network.split_origins("a:1, b:2  c") == ["a:1", "b:2", "c"]


def test_nginx_config_shows_a_busy_page_past_the_page_build_limit_and_routes_the_status_page(tmp_path):
    main, _proxy = class_nginx.nginx_config(tmp_path, "0.0.0.0", 5006, [5100, 5101], ROOT, status_port=5999)
    app = main[main.index("location = /app {"):]
    app = app[: app.index("}")]
    assert f"limit_conn kvviz_pages {2 * class_nginx.PAGE_BUILDS_PER_BACKEND};" in app
    assert "limit_conn_status 503;" in app and "error_page 502 503 504 /kvviz-busy.html;" in app
    assert f"alias {ROOT}/deploy/busy.html;" in main and "proxy_pass http://127.0.0.1:5999;" in main
    busy = (ROOT / "deploy" / "busy.html").read_text()
    assert "The class server is busy, retrying" in busy and "location.reload()" in busy


def location(conf: str, name: str) -> str:
    block = conf[conf.index(f"location {name} {{"):]
    return block[: block.index("}")]


def test_the_live_questions_and_hand_ins_are_limited_per_address_as_the_backends_limit_them(tmp_path):
    main, _proxy = class_nginx.nginx_config(tmp_path, "0.0.0.0", 5006, [5100, 5101], ROOT, environ={})
    per_minute = round(throttle.LIVE_RATE_PER_S * 60)
    assert f"limit_req_zone $binary_remote_addr zone=kvviz_live:10m rate={per_minute}r/m;" in main
    assert f"rate={round(throttle.HANDIN_RATE_PER_S * 60)}r/m;" in main and "limit_req_status 429;" in main
    live = location(main, "= /lesson-live")
    burst = throttle.LIVE_BURST
    assert f"limit_req zone=kvviz_live burst={burst - 1 + class_nginx.LIVE_QUEUE} delay={burst - 1};" in live
    assert "error_page 429 = @kvviz_slow_down;" in live and "proxy_pass http://kvviz_answers;" in live
    assert "limit_req zone=kvviz_handin" in location(main, "= /lesson-handin")
    # nginx's own refusal says what a backend's says, as JSON the page reads
    said = location(main, "@kvviz_slow_down")  # (up to the JSON's first brace)
    line = next(ln for ln in main[main.index("location @kvviz_slow_down {"):].splitlines()
                if "return 429" in ln)
    body = line[line.index("'") + 1: line.rindex("'")]
    refill_s = int(throttle.retry_after(1 / throttle.LIVE_RATE_PER_S))  # (the wait for the next one)
    assert json.loads(body) == {"ok": False, "message": throttle.SLOW_DOWN, "retry_after_s": refill_s}
    assert f"add_header Retry-After {refill_s} always;" in said


def test_the_limits_follow_the_environment_and_the_backends_get_twice_the_burst(tmp_path):
    main, _ = class_nginx.nginx_config(tmp_path, "0.0.0.0", 5006, [5100], ROOT,
                                        environ={"KVVIZ_LIVE_RATE": "0.5", "KVVIZ_LIVE_BURST": "6"})
    assert "zone=kvviz_live:10m rate=30r/m;" in main and "delay=5;" in location(main, "= /lesson-live")
    off, _ = class_nginx.nginx_config(tmp_path, "0.0.0.0", 5006, [5100], ROOT,
                                       environ={"KVVIZ_LIVE_RATE": "0"})
    assert "limit_req " not in location(off, "= /lesson-live")  # (a class behind one address may need it off)
    env = class_nginx.backend_limits_env({"KVVIZ_LIVE_BURST": "4"})
    assert env["KVVIZ_LIVE_BURST"] == "8" and float(env["KVVIZ_LIVE_RATE"]) == throttle.LIVE_RATE_PER_S
    assert env["KVVIZ_HANDIN_BURST"] == str(2 * throttle.HANDIN_BURST)


class StandIn(BaseHTTPRequestHandler):
    """A backend that answers every request at once and counts them."""
    seen: list[str] = []

    def _answer(self) -> None:
        if self.headers.get("Content-Length"):
            self.rfile.read(int(self.headers["Content-Length"]))
        StandIn.seen.append(self.path)
        body = b'{"ok": true, "message": "answered"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


def _send(url: str, post: bool = False) -> tuple[int, dict, dict]:
    req = urllib.request.Request(url, data=b"{}" if post else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


@contextlib.contextmanager
def running_nginx(tmp_path: Path, main: str, proxy: str, port: int) -> Iterator[None]:
    """nginx with this configuration (checked by `nginx -t` first), until the block ends."""
    (tmp_path / "nginx.conf").write_text(main)
    (tmp_path / "proxy.conf").write_text(proxy)
    base = [NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-e",
            str(tmp_path / "nginx-error.log")]
    checked = subprocess.run([*base, "-t", "-q"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    nginx = subprocess.Popen([*base, "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not class_network.port_open(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)


@needs_nginx
def test_nginx_answers_a_flood_429_with_the_sentence_and_passes_nothing_refused_on(tmp_path, monkeypatch):
    backend = ThreadingHTTPServer(("127.0.0.1", free_port()), StandIn)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    monkeypatch.setattr(class_nginx, "LIVE_QUEUE", 0)  # (refused at once past the burst: nothing held)
    monkeypatch.setattr(class_nginx, "HANDIN_QUEUE", 0)
    port = free_port()
    limits = {"KVVIZ_LIVE_RATE": "1", "KVVIZ_LIVE_BURST": "1", "KVVIZ_HANDIN_RATE": "1",
              "KVVIZ_HANDIN_BURST": "1"}
    main, proxy = class_nginx.nginx_config(tmp_path, "127.0.0.1", port, [backend.server_address[1]], ROOT,
                                            status_port=free_port(), environ=limits)
    StandIn.seen = []
    try:
        with running_nginx(tmp_path, main, proxy, port):
            got = [_send(f"http://127.0.0.1:{port}/lesson-live?node=radix&n={i}") for i in range(6)]
            posts = [_send(f"http://127.0.0.1:{port}/lesson-handin", post=True) for _ in range(6)]
    finally:
        backend.shutdown()
    assert got[0][0] == 200
    refused = [g for g in got if g[0] == 429]
    assert refused, [g[0] for g in got]  # (six at once from one address: one a second passes)
    for _status, headers, answer in refused:
        assert (headers["Retry-After"] == "1" and answer["message"] == throttle.SLOW_DOWN
                and answer["ok"] is False)
    answered = sum(1 for g in got if g[0] == 200)
    # (the refused: never passed on)
    assert sum(1 for p in StandIn.seen if p.startswith("/lesson-live")) == answered
    assert any(p[0] == 429 and p[2]["message"] == throttle.SLOW_DOWN_HANDIN for p in posts)


class SlowStandIn(BaseHTTPRequestHandler):
    """A backend that takes a while over each answer and notes which of the stand-ins answered."""
    seen: list[int] = []
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        SlowStandIn.seen.append(self.server.server_address[1])
        time.sleep(0.4)  # (an answer being computed: its request holds a connection meanwhile)
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@needs_nginx
def test_questions_typed_at_once_from_one_address_queue_on_every_backend(tmp_path):
    """A page is kept on its backend by address; a live answer goes to the backend with the fewest
    in hand: 8 questions at once from one address (one classroom's worth behind a NAT, or one
    backend's hash share) are answered by both backends, not queued on the one the address
    hashes to."""
    backends = [ThreadingHTTPServer(("127.0.0.1", free_port()), SlowStandIn) for _ in range(2)]
    for b in backends:
        threading.Thread(target=b.serve_forever, daemon=True).start()
    port = free_port()
    ports = [b.server_address[1] for b in backends]
    main, proxy = class_nginx.nginx_config(tmp_path, "127.0.0.1", port, ports, ROOT, status_port=free_port(),
                                            environ={"KVVIZ_LIVE_RATE": "0"})
    assert "proxy_pass http://kvviz_answers;" in location(main, "= /lesson-live")
    assert "proxy_pass http://kvviz_backends;" in location(main, "= /app")  # (a page stays by address)
    SlowStandIn.seen = []
    try:
        with running_nginx(tmp_path, main, proxy, port):
            url = f"http://127.0.0.1:{port}/lesson-live?node=radix&q="
            threads = [threading.Thread(target=_send, args=(f"{url}{i}",)) for i in range(8)]
            for t in threads:
                t.start()
                time.sleep(0.02)  # (each arrives while the earlier ones are still being answered)
            for t in threads:
                t.join(timeout=30)
    finally:
        for b in backends:
            b.shutdown()
    counts = sorted(SlowStandIn.seen.count(p) for p in ports)
    assert sum(counts) == 8 and counts[0] >= 3, counts
