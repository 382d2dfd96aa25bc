"""A class on loopback, for the class benchmarks and the tests: `make class`'s server
(deploy/class_server.py: nginx in front of `panel serve` backends) started here and stopped, its
state file read, and HTTP sent from a student's own loopback address (127.1.x.y), so that nginx's
`hash $remote_addr` spreads the students as it would a room.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLASS_SERVER = ROOT / "deploy" / "class_server.py"
START_TIMEOUT_S = 300
HTTP_TIMEOUT_S = 120
RESOURCE_RE = re.compile(r'<(?:script[^>]*\bsrc|link[^>]*\bhref)="([^"]+)"')


def state_path(port: int) -> Path:
    """Where the class server on `port` describes itself (backends, pids, logs)."""
    sys.path.insert(0, str(CLASS_SERVER.parent))
    try:
        import class_server  # noqa: PLC0415 (deploy/ is not a package: the one place that knows the path)
    finally:
        sys.path.pop(0)
    return class_server.state_path(port)


def read_state(port: int) -> dict | None:
    with contextlib.suppress(FileNotFoundError, ValueError):
        return json.loads(state_path(port).read_text())
    return None


def running_state(port: int) -> dict | None:
    """The state of a class server already running and ready on `port`, if one is."""
    state = read_state(port)
    if not state or not state.get("ready"):
        return None
    try:
        os.kill(state["pid"], 0)
    except OSError:
        return None
    return state


class ClassServer:
    """`python deploy/class_server.py` on loopback, stopped (with all its children) on exit."""

    def __init__(self, port: int, backends: int, base_port: int, extra: list[str] | None = None):
        self.port, self.backends, self.base_port, self.extra = port, backends, base_port, extra or []
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    def __enter__(self) -> ClassServer:
        cmd = [sys.executable, str(CLASS_SERVER), "--address", "127.0.0.1", "--port", str(self.port),
               "--backends", str(self.backends), "--base-port", str(self.base_port), *self.extra]
        log = tempfile.NamedTemporaryFile(  # noqa: SIM115
            "w", prefix="kvviz-class-server-", suffix=".log", delete=False)
        self.log_path = Path(log.name)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                state = read_state(self.port)
                if state and state.get("ready") and state.get("pid") == self.proc.pid:
                    return self
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the class server exited ({self.proc.returncode}):\n"
                                       f"{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the class server was not ready after {START_TIMEOUT_S} s:\n"
                                       f"{self.log_tail()}")
                time.sleep(0.5)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def log_tail(self, num_chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-num_chars:] if self.log_path else ""

    def __exit__(self, *_exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # as Ctrl-C: it stops nginx and the backends
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)


# -- a student's HTTP ---------------------------------------------------------------------------
def source_address(i: int) -> str:
    """Student i's loopback source address: 127.1.0.1, 127.1.0.2, ... (250 per third octet)."""
    return f"127.1.{i // 250}.{i % 250 + 1}"


def answered_by(upstreams: str | None) -> str | None:
    """The backend that answered, from nginx's $upstream_addr: after a retry it lists every
    backend tried ("127.0.0.1:5101, 127.0.0.1:5100"), the last one answered."""
    return upstreams.split(",")[-1].strip() if upstreams else None


async def http_request(host: str, port: int, method: str, path: str, source: str, body: bytes = b"",
                       headers: dict[str, str] | None = None, timeout: float = HTTP_TIMEOUT_S,
                       decompress: bool = True) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one HTTP/1.0 request (no chunked encoding), sent from `source`,
    accepting gzip as a browser does (the body returned is decompressed unless `decompress` is
    False: a browser's work, on its own machine; `wire_bytes` in the headers is what came over
    the socket)."""
    async def go():
        reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
        sent = {**(headers or {}), **({} if method == "GET" else {"Content-Length": str(len(body))})}
        extra = "".join(f"{k}: {v}\r\n" for k, v in sent.items())
        try:
            writer.write(f"{method} {path} HTTP/1.0\r\nHost: {host}:{port}\r\nUser-Agent: kvviz-classroom\r\n"
                         f"Accept: */*\r\nAccept-Encoding: gzip\r\n{extra}\r\n".encode() + body)
            await writer.drain()
            raw = await reader.read()
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        head, _, answer = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        said = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        said["wire_bytes"] = str(len(answer))
        if decompress and said.get("content-encoding") == "gzip":
            answer = gzip.decompress(answer)
        return status, said, answer
    return await asyncio.wait_for(go(), timeout)


async def http_get(host: str, port: int, path: str, source: str, timeout: float = HTTP_TIMEOUT_S,
                   decompress: bool = True) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of a GET (`http_request`)."""
    return await http_request(host, port, "GET", path, source, timeout=timeout, decompress=decompress)


def page_resources(page: str, page_path: str) -> list[str]:
    """Paths of the scripts and stylesheets a page loads from its own server."""
    out = []
    for ref in RESOURCE_RE.findall(page):
        parsed = urllib.parse.urlsplit(urllib.parse.urljoin(page_path, ref))
        if parsed.netloc or parsed.scheme not in ("", "http", "https"):
            continue  # another host (none in a served page; a CDN would be), or inline (the icon: data:)
        out.append(parsed.path + (f"?{parsed.query}" if parsed.query else ""))
    return list(dict.fromkeys(out))


async def fetch_all(host: str, port: int, paths: list[str], source: str,
                    decompress: bool = True) -> list[tuple[int, int]]:
    """(status, bytes on the wire) of each path, six at a time as a browser's connections."""
    sem = asyncio.Semaphore(6)

    async def one(p: str) -> tuple[int, int]:
        async with sem:
            status, headers, _body = await http_get(host, port, p, source, decompress=decompress)
            return status, int(headers["wire_bytes"])

    return list(await asyncio.gather(*(one(p) for p in paths)))
