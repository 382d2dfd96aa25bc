"""Where the served recording lies and how far its making has got: what a server reads of it.

The recordings a server plays to its students are made once per code and model (kvviz/export/
cache.py, `python -m kvviz.export.cache`) into `<KVVIZ_CACHE or .kvviz-cache>/recordings/<key>/`,
where `key` is a hash of the code that draws and runs the lesson, the model's weights and the
Bokeh and Panel versions. This module names that folder, says whether it is ready and what the
recording in progress is doing, and starts the making as its own command in a child process: a
server (kvviz/serve/) reads the recording through it and never imports what writes the pages.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("kvviz", "engine", "kernels", "vllm_watch")  # every .py, .js, .css and .c file under these
SUFFIXES = {".py", ".js", ".css", ".c"}
MAKE = "kvviz.export.cache"  # the module that makes a recording (`python -m`)


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
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


@functools.cache
def served_key() -> str:
    """This process's `key()`, computed once (it reads every source file)."""
    return key()


def ready(root: Path | None = None, k: str | None = None) -> Path | None:
    """The finished recording's folder for this code, or None while there is none."""
    folder = (root or cache_root()) / (k or key())
    return folder if (folder / "index.html").is_file() else None


def progress_path(root: Path, k: str) -> Path:
    return root / f"{k}.progress.json"


def progress(root: Path | None = None, k: str | None = None) -> dict[str, Any] | None:
    """The recording in progress: {"what": "node 02 · PagedAttention", "done": 1, "total": 4,
    "seconds": 21.5} (parts done of all: the walks of the nodes' states, then the pages; seconds
    since it started), or None when none is being made (or it has not begun)."""
    try:
        facts = json.loads(progress_path(root or cache_root(), k or key()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return facts if isinstance(facts, dict) else None


def progress_line(facts: Mapping[str, Any]) -> str:
    """One line for a terminal or a page: "recording node 02 · PagedAttention… 25% (part 2 of 4)"."""
    done, total = int(facts.get("done", 0)), max(int(facts.get("total", 1)), 1)
    return (f"recording {facts.get('what', 'the lesson')}… {100 * done // total}% "
            f"(part {min(done + 1, total)} of {total})")


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


def start_in_background() -> subprocess.Popen[bytes] | None:
    """Make the recording in a child process (`python -m kvviz.export.cache`) unless it is there
    (the server answers live meanwhile); returns the child, or None when the recording is ready."""
    if ready() is not None:
        return None
    return subprocess.Popen([sys.executable, "-m", MAKE], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "BOKEH_VALIDATE_DOC": "false"})
