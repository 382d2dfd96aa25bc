"""The served lesson and the browser that drives it, shared by the browser tests (tests/ui) and
the UI latency benchmark: `panel serve app.py` on a free port, and Debian's Chromium
(/usr/bin/chromium, or $KVVIZ_CHROMIUM) launched by Playwright. No browser is ever downloaded.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("KVVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SERVER_START_S = 120


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`panel serve app.py` on a free port, one process, stopped on exit; `url` is its /app.
    As `make lesson`, it serves the recorded lesson too (`base`: kvviz/serve/routes.py), once its
    recordings are made (`wait_for_recordings`).

    `apps` serves more app files next to it (e.g. ("app.py", "teacher.py"): /app and /teacher,
    each at `base + name`); `env` adds environment variables for the server (e.g. KVVIZ_DB)."""

    def __init__(self, apps: tuple[str, ...] = ("app.py",), env: dict[str, str] | None = None,
                 port: int | None = None, address: str = "127.0.0.1"):
        self.apps, self.env, self.port = apps, env, port  # (a port of its own: a restart can reuse it)
        self.address = address  # (another loopback address stands in for another machine)

    def __enter__(self) -> Server:
        port = self.port or free_port()
        cmd = [sys.executable, "-m", "panel", "serve", *self.apps, "--port", str(port),
               "--address", self.address, "--allow-websocket-origin", f"localhost:{port}",
               "--allow-websocket-origin", f"{self.address}:{port}", "--num-procs", "1",
               "--static-dirs", "assets=./assets", "--plugins", "kvviz.serve.routes"]
        self.log = tempfile.NamedTemporaryFile("w+", prefix="kvviz-serve-", suffix=".log", delete=False)  # noqa: SIM115
        env = {**os.environ, **self.env} if self.env else None
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        host = "localhost" if self.address == "127.0.0.1" else self.address
        self.base = f"http://{host}:{port}/"
        self.url = self.base + "app"
        try:
            self._wait_until_up()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=30) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"panel serve did not start; see {self.log.name}:\n{self.log_tail()}")
            time.sleep(0.5)

    def wait_for_recordings(self, timeout_s: float = 600) -> None:
        """Until the served lesson's recordings are ready (made in the background at start)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with urllib.request.urlopen(self.base + "lesson-status", timeout=30) as r:
                if json.loads(r.read())["ready"]:
                    return
            time.sleep(1)
        raise RuntimeError(f"the recordings were not ready in {timeout_s} s")

    def log_tail(self, num_chars: int = 3000) -> str:
        return Path(self.log.name).read_text(errors="replace")[-num_chars:]

    def __exit__(self, *_exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
