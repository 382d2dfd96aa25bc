"""The `kvviz` command (`python -m kvviz` where no script folder is on PATH): what the Makefile's
targets run, on Linux, macOS and Windows alike.

    kvviz lesson [--port 5006] [--address localhost]   the lesson (/) and the teacher page (/teacher)
    kvviz class [...]                                   a whole class from this machine
                                                        (deploy/class_server.py)
    kvviz export DIR [--live-url URL]                   the lesson as static pages (kvviz.export)
    kvviz vllm [--port 8000]                            a real vLLM serving kvviz's model
                                                        (tools/vllm_server.py)

Importing this module imports only the standard library: `--help` is instant, and each command
imports what it needs when it runs. The lesson is served from the checkout this package lives in
(app.py, teacher.py and assets/ beside kvviz/): install with `pip install -e .` from a checkout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PORT = 5006
LOCAL = ("localhost", "127.0.0.1", "::1")


def checkout() -> Path:
    """The checkout holding app.py and assets/ (where this package was installed from, editable)."""
    if not (ROOT / "app.py").is_file() or not (ROOT / "assets").is_dir():
        raise SystemExit(f"kvviz: no app.py and assets/ beside the kvviz package ({ROOT}): "
                         "run it from a checkout, or install one with `pip install -e .`")
    return ROOT


def default_allow(address: str, port: int) -> str:
    """The websocket origins allowed by default: this machine's own page when it listens on
    localhost only; any ('*') when it listens on a network (students' browsers name this machine
    by whatever address they reach it at)."""
    return f"localhost:{port}" if address in LOCAL else "*"


def lesson_argv(port: int = DEFAULT_PORT, address: str = "localhost", procs: int = 1,
                allow: str | None = None, python: str = sys.executable) -> list[str]:
    """The `panel serve` command line that serves the lesson (run from the checkout's root):
    app.py at / and /app, the teacher page at /teacher, assets/ at /assets, the recorded lesson's
    routes (kvviz.serve.routes), whose recording begins at the start (on_start.py)."""
    allow = allow if allow is not None else default_allow(address, port)
    return [python, "-m", "panel", "serve", "app.py", "teacher.py", "--port", str(port), "--address", address,
            "--num-procs", str(procs), "--allow-websocket-origin", allow, "--static-dirs", "assets=./assets",
            "--plugins", "kvviz.serve.routes", "--setup", "on_start.py"]


def students_url(address: str, port: int) -> str:
    if address in ("0.0.0.0", "::", ""):
        return f"http://<this computer's address>:{port}/  (e.g. http://{socket.gethostname()}:{port}/)"
    return f"http://{address}:{port}/"


def _run(argv: list[str], env: dict[str, str] | None = None) -> int:
    """Runs a server in the foreground until it stops: Ctrl-C (which reaches it too) or a
    SIGTERM/SIGHUP sent to this process, passed on to it, so it never outlives this command."""
    child = subprocess.Popen(argv, cwd=checkout(), env=env)
    forwarded = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {sig: signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
                for sig in forwarded}
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=15)  # (it got the Ctrl-C too: let it stop cleanly)
                if child.poll() is None:
                    child.terminate()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def watch_recording(url: str, stop: threading.Event, root: Path | None = None, k: str | None = None,
                    every_s: float = 2.0, out=None) -> None:
    """While the server makes its first recording of the lesson (kvviz/export/cache.py: about ten
    seconds on two cores), print a line each time it moves on ("recording node 02 ·
    PagedAttention… 25% (page 2 of 4), the live lesson at /app meanwhile"), then one when the
    recorded lesson is ready."""
    from kvviz.export import cache_folder  # (its key() imports Bokeh and Panel: here, in this thread)

    out = out or sys.stdout
    k = k or cache_folder.key()
    if cache_folder.ready(root, k) is not None:
        return
    started, said = time.monotonic(), None
    while not stop.wait(every_s):
        if cache_folder.ready(root, k) is not None:
            print(f"The recorded lesson is ready ({time.monotonic() - started:.0f} s): {url}", file=out,
                  flush=True)
            return
        facts = cache_folder.progress(root, k)
        line = f"{cache_folder.progress_line(facts)}, the live lesson at /app meanwhile" if facts else None
        if line is not None and line != said:
            print(line, file=out, flush=True)
            said = line


def cmd_lesson(args: argparse.Namespace) -> int:
    root = checkout()
    host = "localhost" if args.address in ("0.0.0.0", "::") else args.address
    from kvviz.handin import key  # (SQLAlchemy: the passphrase is stored in the class database)

    key.main(["--url", f"http://{host}:{args.port}/teacher"])
    print(f"The lesson (students open this): {students_url(args.address, args.port)}  (recorded from this "
          "engine at the first start, in under a minute; live at /app meanwhile)", flush=True)
    argv = lesson_argv(args.port, args.address, args.procs, args.allow)
    print(f"(in {root}: panel serve {' '.join(argv[4:])})", flush=True)
    stop = threading.Event()
    threading.Thread(target=watch_recording, args=(f"http://{host}:{args.port}/", stop), daemon=True).start()
    try:
        return _run(argv)
    finally:
        stop.set()


def cmd_class(rest: list[str]) -> int:
    env = os.environ | {"BOKEH_VALIDATE_DOC": "false"}
    return _run([sys.executable, str(checkout() / "deploy" / "class_server.py"), *rest], env=env)


def cmd_export(rest: list[str]) -> int:
    from kvviz.export.__main__ import main as export_main

    return export_main(rest, prog="kvviz export")


def cmd_vllm(rest: list[str]) -> int:
    root = checkout()
    venv = Path(os.environ.get("KVVIZ_VLLM_VENV", root / ".venv-vllm"))
    if not any(h in rest for h in ("-h", "--help")) and not (venv / "bin" / "python").exists():
        print(f"kvviz vllm: no vLLM environment in {venv}. vLLM's CPU build is for Linux: `make vllm` sets "
              "it up (about 3.4 GB) and starts it. The lesson's node 04 plays a recording of a real vLLM "
              "without it.",
              file=sys.stderr)
        return 1
    env = os.environ | {"KVVIZ_VLLM_VENV": str(venv)}
    return _run([sys.executable, "-m", "tools.vllm_server", *rest], env=env)  # (run in the checkout)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kvviz",
                                description="The KV-cache lesson: serve it, serve a class, export it.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    lesson = sub.add_parser("lesson", help="serve the lesson (/) and the teacher page (/teacher)",
                            description="Serve the lesson at http://ADDRESS:PORT/ (and /app) and the teacher "
                            "page at /teacher, printing the teacher's passphrase first. Ctrl-C stops it.")
    lesson.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help="the port (default 5006)")
    lesson.add_argument("--address", default="localhost",
                        help="where to listen: localhost (default: this computer only) or 0.0.0.0 (every "
                        "network: for a class on the same Wi-Fi)")
    lesson.add_argument("--procs", type=int, default=1, help="server processes (default 1)")
    lesson.add_argument("--allow", default=None,
                        help="websocket origins allowed, host:port (default: localhost:PORT when the address "
                             "is "
                        "localhost, else '*', any)")
    lesson.set_defaults(run=cmd_lesson)

    for name, what, usage in (
        ("class", "serve a whole class from this machine: one server per core behind nginx (Linux)",
         "deploy/class_server.py's options (kvviz class --help lists them)"),
        ("export", "write the lesson as static pages that replay the engine (no server needed)",
         "DIR [--live-url URL] [--only NODE] (kvviz export --help lists them)"),
        ("vllm", "serve kvviz's model with a real vLLM for node 04 (Linux; `make vllm` sets it up)",
         "tools/vllm_server.py's options (kvviz vllm --help lists them)"),
    ):
        # Listed here for `kvviz --help`; main() hands their arguments, --help included, on whole
        # to the underlying command, whose options they are.
        sub.add_parser(name, help=what, description=what, usage=f"kvviz {name} {usage}")
    return p


PASSED_ON = {"class": cmd_class, "export": cmd_export, "vllm": cmd_vllm}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in PASSED_ON:
        return int(PASSED_ON[argv[0]](argv[1:]) or 0)
    args = parser().parse_args(argv)
    return int(args.run(args) or 0)
