"""The served lesson and the browser that drives it, shared by the browser tests (tests/ui), the
class benchmarks and the README's pictures (tools/screenshots.py): `panel serve app.py` on a
free port, Debian's Chromium (/usr/bin/chromium, or $KVVIZ_CHROMIUM) launched by Playwright (no
browser is ever downloaded), and `settled(page)`: a wait until the page's figures are drawn and
its layout holds still (the same box over FRAMES animation frames, Playwright's own notion of a
stable element applied to the whole page), never a wait on the clock.
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
        self.log = tempfile.NamedTemporaryFile(  # noqa: SIM115
            "w+", prefix="kvviz-serve-", suffix=".log", delete=False)
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


# -- a page settled --------------------------------------------------------------------------------
FRAMES = 5

SETTLED_JS = """([frames, condition]) => {
  const state = window.__kvSettled || (window.__kvSettled = {sig: null, same: 0});
  if (typeof Bokeh === "undefined" || Bokeh.documents.length === 0) return false;
  if (![...Bokeh.documents].every((d) => d.is_idle) || document.fonts.status !== "loaded") return false;
  const figures = [];
  const walk = (v) => {
    if (v.model.type === "Figure") figures.push(v);
    for (const c of (v.children ? v.children() : [])) walk(c);
  };
  for (const v of Bokeh.index) walk(v);
  if (!figures.every((v) => v.has_finished())) { state.same = 0; return false; }
  const root = document.documentElement;
  const sig = JSON.stringify([root.scrollWidth, root.scrollHeight, window.scrollX, window.scrollY,
    figures.map((v) => { const r = v.el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height, v.model.height]; })]);
  state.same = sig === state.sig ? state.same + 1 : 0;
  state.sig = sig;
  if (state.same < frames) return false;
  return condition ? Boolean((0, eval)(condition)()) : true;
}"""  # noqa: E501 (data: a string kept as written)


def settled(page, condition: str | None = None, timeout: float | None = None) -> None:
    """Until the page has settled (above) and `condition`, a JavaScript function of no
    arguments evaluated in the page, returns something true."""
    page.evaluate("delete window.__kvSettled")
    page.wait_for_function(SETTLED_JS, arg=[FRAMES, condition], polling="raf", timeout=timeout)
