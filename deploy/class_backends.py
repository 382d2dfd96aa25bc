"""The class server's backends: one single-process `panel serve app.py teacher.py` each, its
command line, its process (its own process group, its log and pid file) and its restarts when it
exits; the hand-ins' store they share and the teacher page's passphrase. Used by class_server.py.

Standard library only, like class_server.py.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

import class_machines as machines

RESTART_DELAYS_S = (1, 2, 5, 10, 30)  # a backend that keeps dying is restarted less often
PR_SET_PDEATHSIG = 1


APPS = ("app.py", "teacher.py")  # /app for the students, /teacher for the teacher
# Warmed up on each backend at start: the live lesson (what / opens until the recording is made),
# and Explain it back (live from the recorded lesson). Each backend readies its own engine for
# what no recording holds by itself, once the recording is there (kvviz/serve/routes.py).
WARM_PATHS = ("/app", "/app?node=explain")


def backend_command(port: int, origins: list[str], session_lifetime_ms: int, check_sessions_ms: int,
                    address: str = "127.0.0.1", apps: tuple[str, ...] = APPS) -> list[str]:
    cmd = [sys.executable, "-m", "panel", "serve", *apps, "--port", str(port), "--address", address,
           "--num-procs", "1", "--static-dirs", "assets=./assets", "--use-xheaders",
           "--plugins", "kvviz.serve.routes",  # (/: the recorded lesson, played in the browser)
           "--setup", "on_start.py",  # (its recording begun at the backend's start)
           "--unused-session-lifetime", str(session_lifetime_ms),
           "--check-unused-sessions", str(check_sessions_ms)]
    for origin in origins:
        cmd += ["--allow-websocket-origin", origin]
    return cmd


def child_setup() -> None:
    """In each child: its own process group (Ctrl-C reaches only this script, which then stops
    the children in order), and SIGTERM if this script dies without cleaning up."""
    os.setsid()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def class_db(environ=os.environ) -> Path | str:
    """The hand-ins' database: a postgresql:// URL as given (shared by every machine), else the
    file's absolute path (the backends run in the app's directory)."""
    value = (environ.get("KVVIZ_DB") or "").strip() or "kvviz-class.db"
    return value if machines.is_url(value) else Path(value).expanduser().resolve()


def teacher_line(app_root: Path, env: dict, url: str) -> str:
    """The teacher page's address and passphrase, from `python -m kvviz.handin.key` (which
    creates the passphrase in the database when KVVIZ_TEACHER_KEY is not set)."""
    try:
        out = subprocess.run([sys.executable, "-m", "kvviz.handin.key", "--url", url], cwd=app_root, env=env,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"Teacher page: {url} (its passphrase could not be read: {e})"
    return out.stdout.strip() or (
        f"Teacher page: {url} (its passphrase could not be read: {out.stderr.strip()[-300:]})")


# a backend on port P serves its counts on 127.0.0.1:P+500 (kvviz/process/metrics.py)
METRICS_PORT_OFFSET = 500


class Backend:
    def __init__(self, index: int, port: int, cmd: list[str], run_dir: Path, cwd: Path, env: dict):
        self.metrics_port = port + METRICS_PORT_OFFSET
        env = {**env, "KVVIZ_METRICS_PORT": str(self.metrics_port)}
        self.index, self.port, self.cmd, self.cwd, self.env = index, port, cmd, cwd, env
        self.log_path = run_dir / f"backend-{index}.log"
        self.pid_path = run_dir / f"backend-{index}.pid"
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        with self.log_path.open("a") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         preexec_fn=child_setup)
        self.pid_path.write_text(f"{self.proc.pid}\n")

    def restart_when_due(self, now: float) -> bool:
        """For a backend that has exited: its restart scheduled (RESTART_DELAYS_S: later each time it
        exits again), or made once due; True when it was restarted just now."""
        if self.restart_at is None:
            delay = RESTART_DELAYS_S[min(self.restarts, len(RESTART_DELAYS_S) - 1)]
            self.restart_at = now + delay
            print(f"class server: backend {self.index} (port {self.port}) exited ({self.proc.returncode}); "
                  f"nginx sends its students to the others; restarting it in {delay} s", file=sys.stderr,
                  flush=True)
            return False
        if now < self.restart_at:
            return False
        self.restart_at = None
        self.restarts += 1
        self.start()
        return True

    def describe(self) -> dict:
        return {"index": self.index, "port": self.port, "pid": self.proc.pid if self.proc else None,
                "log": str(self.log_path), "pid_file": str(self.pid_path), "restarts": self.restarts}


def stop_process(proc: subprocess.Popen | None, sig: int = signal.SIGTERM, timeout_s: float = 10) -> None:
    """Stop one child (and its process group) and wait for it; SIGKILL if it does not go."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
