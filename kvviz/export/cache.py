"""The recordings a server plays to its students: made once per code and model, kept on disk.

`python -m kvviz.export.cache` records the whole lesson from this checkout's engine (the served
site of kvviz/export/site.py: its live-only controls continue live) into the cache's folder for
this code (kvviz/export/cache_folder.py: `<KVVIZ_CACHE or .kvviz-cache>/recordings/<key>/`).
Another server on the same code finds it there at once; a change of code or weights makes a new
one. The folder is written under another name and renamed when complete, so a server never
serves half of one; a lock file lets one process of several (a class server's backends) make it
while the others wait for it. A server starts this command in a child process
(`cache_folder.start_in_background`) and never imports this module.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from kvviz.export.cache_folder import cache_root, key, progress_path, ready
from kvviz.export.lanes import exit_with_parent


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


def _lock(file: IO[str]) -> None:
    """An exclusive lock on an open file, held until it is closed: flock where there is one
    (Linux, macOS), else Windows' msvcrt.locking, retried while another process holds it."""
    if sys.platform == "win32":
        import msvcrt

        while True:
            try:
                msvcrt.locking(file.fileno(), msvcrt.LK_LOCK, 1)  # (itself retries for 10 s)
                return
            except OSError:
                continue
    else:
        import fcntl

        fcntl.flock(file, fcntl.LOCK_EX)


def write_progress(root: Path, k: str, facts: dict[str, Any]) -> None:
    """What the recording in progress is doing (read by `cache_folder.progress`), replaced whole.
    (Told from two threads at once, the walks' and the pages': each writer's part is its own.)"""
    path = progress_path(root, k)
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
    part.write_text(json.dumps(facts), encoding="utf-8")
    os.replace(part, path)


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


def main() -> int:
    # (a recording started by a server stops when the server does, its workers with it: made again next
    # time; the thread is named: the recording's workers may be forked beside it, walk.py `forked`)
    exit_with_parent("kvviz-parent-watch")
    started = time.monotonic()
    folder = make()
    print(f"recordings ready in {folder} ({time.monotonic() - started:.1f} s)")
    return 0


def _exit_now(code: int) -> None:
    """End this process at once, its recording written and its workers gone: Python's own
    finalization would free every object the recording made (its pages' Bokeh documents, the
    engines' snapshots), about a second of a core after the lesson is ready, which a `make` or a
    person waiting for the command would wait for too."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit_now(main())
