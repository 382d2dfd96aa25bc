"""The recordings a server plays to its students: made once per code and model, kept on disk.

`python -m kvviz.export.cache` records the whole lesson from this checkout's engine (the served
site of kvviz/export/site.py: its live-only controls continue live) into
`<KVVIZ_CACHE or .kvviz-cache>/recordings/<key>/`, where `key` is a hash of the code that draws
and runs the lesson, the model's weights and the Bokeh and Panel versions. Another server on
the same code finds it there at once; a change of code or weights makes a new one. The folder
is written under another name and renamed when complete, so a server never serves half of one;
a lock file lets one process of several (a class server's backends) make it while the others
wait for it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("kvviz", "engine", "kernels", "vllm_watch")  # every .py, .js, .css and .c file under these
SUFFIXES = {".py", ".js", ".css", ".c"}


def cache_root(environ=os.environ) -> Path:
    return Path(environ.get("KVVIZ_CACHE") or ROOT / ".kvviz-cache") / "recordings"


def key() -> str:
    """A short hash of what a recording depends on: the sources, the stylesheet, the model's
    weights (by their recorded hash), Bokeh's and Panel's versions."""
    import bokeh
    import panel

    h = hashlib.sha256(f"bokeh {bokeh.__version__} panel {panel.__version__}\n".encode())
    files = sorted(p for d in SOURCES for p in (ROOT / d).rglob("*") if p.suffix in SUFFIXES and p.is_file())
    for path in [*files, ROOT / "assets" / "kvviz.css", ROOT / "assets" / "model.json"]:
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def ready(root: Path | None = None, k: str | None = None) -> Path | None:
    """The finished recording's folder for this code, or None while there is none."""
    folder = (root or cache_root()) / (k or key())
    return folder if (folder / "index.html").is_file() else None


def make(root: Path | None = None, k: str | None = None) -> Path:
    """Record the lesson into the cache (unless another process has, or is doing it: then wait
    for that one). Returns the folder."""
    root, k = root or cache_root(), k or key()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{k}.lock", "w") as lock:
        _lock(lock)  # (waits while another process records)
        if (done := ready(root, k)) is not None:
            return done
        import torch

        from kvviz.export.site import export

        torch.set_num_threads(1)
        work = root / f"{k}.partial-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        started = time.monotonic()

        def report(what: str, done: int, total: int) -> None:
            write_progress(root, k, {"what": what, "done": done, "total": total,
                                     "seconds": round(time.monotonic() - started, 1)})

        export(work, served=True, progress=report)
        precompress(work)
        facts = json.loads((work / "recording.json").read_text(encoding="utf-8"))
        facts["seconds"] = round(time.monotonic() - started, 1)
        (work / "recording.json").write_text(json.dumps(facts, indent=2), encoding="utf-8")
        os.replace(work, root / k)
        progress_path(root, k).unlink(missing_ok=True)
        for old in root.iterdir():  # older recordings of other code
            if old.is_dir() and old.name != k:  # (and half-written ones: the lock is ours)
                shutil.rmtree(old, ignore_errors=True)
        return root / k


def _lock(file) -> None:
    """An exclusive lock on an open file, held until it is closed: flock where there is one
    (Linux, macOS), else Windows' msvcrt.locking, retried while another process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        while True:
            try:
                msvcrt.locking(file.fileno(), msvcrt.LK_LOCK, 1)  # (itself retries for 10 s)
                return
            except OSError:
                continue
    fcntl.flock(file, fcntl.LOCK_EX)


def progress_path(root: Path, k: str) -> Path:
    return root / f"{k}.progress.json"


def write_progress(root: Path, k: str, facts: dict) -> None:
    """What the recording in progress is doing (read by `progress`), replaced whole."""
    path = progress_path(root, k)
    part = path.with_name(f"{path.name}.{os.getpid()}")
    part.write_text(json.dumps(facts), encoding="utf-8")
    os.replace(part, path)


def progress(root: Path | None = None, k: str | None = None) -> dict | None:
    """The recording in progress: {"what": "node 02 · PagedAttention", "done": 1, "total": 4,
    "seconds": 21.5} (parts done of all: the walks of the nodes' states, then the pages; seconds
    since it started), or None when none is being made (or it has not begun)."""
    try:
        return json.loads(progress_path(root or cache_root(), k or key()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def progress_line(facts: dict) -> str:
    """One line for a terminal or a page: "recording node 02 · PagedAttention… 25% (part 2 of 4)"."""
    done, total = int(facts.get("done", 0)), max(int(facts.get("total", 1)), 1)
    return f"recording {facts.get('what', 'the lesson')}… {100 * done // total}% (part {min(done + 1, total)} of {total})"


@functools.cache
def served_key() -> str:
    """This process's `key()`, computed once (it reads every source file)."""
    return key()


def recording_line(root: Path | None = None, k: str | None = None) -> str | None:
    """What the live page says while the recording is being made ("recording node 02 ·
    PagedAttention… 25% (part 2 of 4): ..."); None when it is ready or none is being made."""
    k = k or served_key()
    if ready(root, k) is not None:
        return None
    facts = progress(root, k)
    if facts is None:
        return None
    return (f"The server is making the recorded lesson, {progress_line(facts)}. This page runs live "
            f"meanwhile; the recorded one opens at the lesson's address when it is ready.")


def precompress(folder: Path) -> int:
    """A `.gz` beside every page, script and stylesheet (nginx's `gzip_static`: a class's first
    visits are then read from disk, not compressed again for every student). Returns how many."""
    import gzip

    n = 0
    for path in folder.rglob("*"):
        if path.suffix in {".html", ".js", ".css", ".json"} and path.is_file():
            path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes(), 9, mtime=0))
            n += 1
    return n


def start_in_background() -> subprocess.Popen | None:
    """Make the recording in a child process unless it is there (the server answers live
    meanwhile); returns the child, or None when the recording is ready."""
    if ready() is not None:
        return None
    return subprocess.Popen([sys.executable, "-m", "kvviz.export.cache"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "BOKEH_VALIDATE_DOC": "false"})


def _exit_with_parent() -> None:
    """A recording started by a server stops when the server does (it is made again next time)."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main() -> int:
    _exit_with_parent()
    started = time.monotonic()
    folder = make()
    print(f"recordings ready in {folder} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
