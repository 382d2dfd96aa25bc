"""Stand-ins for a worker's walk of a piece (kvviz/export/walk.py `walk_all(work=...)`), run in the
walks' worker processes: importable by name there (pickled by reference)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def walked(piece: Any) -> dict[str, Any]:
    """A piece's walk with one state per branch and no property: what `join` needs."""
    return {"props": [], "values": [], "branches": {b: [[]] for b in piece.branches},
            "steps": {b: [0] for b in piece.branches}, "links": {b: "" for b in piece.branches}, "before": {}}


def stuck_once(piece: Any) -> dict[str, Any]:
    """A piece with a branch named `<folder>/...stuck` hangs the first time (a file beside it says
    it did), as a stuck worker does; every other piece, and that one the second time, is walked."""
    for branch in piece.branches:
        mark = Path(branch + ".was-stuck")
        if branch.endswith("stuck") and not mark.exists():
            mark.touch()
            time.sleep(3600)
    return walked(piece)


def always_stuck(piece: Any) -> dict[str, Any]:
    time.sleep(3600)
    return walked(piece)


def whose(arg: Any) -> tuple[int, Any, int]:
    """(this process's id, `arg`, its priority's niceness): which lane ran a task, and how."""
    import os

    return os.getpid(), arg, os.getpriority(os.PRIO_PROCESS, 0)


def fails(arg: Any) -> None:
    raise ValueError(f"no such thing as {arg}")


def dies(arg: Any) -> None:
    import os

    os._exit(3)
