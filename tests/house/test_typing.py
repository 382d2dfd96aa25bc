"""The engine, the kernels, the vLLM watcher, the recorded lesson's builder (kvviz/export/) and its
server (kvviz/serve/) type-check under `mypy --strict` (configuration: pyproject.toml's
[tool.mypy]), and the Literal names a snapshot holds are exactly the engine's enum values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from engine.events import EVENT_KINDS
from engine.request import Status, StatusName, Stop, StopName
from engine.snapshot import BLOCK_STATES

ROOT = Path(__file__).resolve().parents[2]


def mypy_cache() -> Path:
    """mypy's incremental cache, kept in the user's cache folder (as the native kernels' builds
    are) so that a fresh clone on the same machine checks only what differs from the last run: mypy
    reads a cached module again when its source's hash differs (about 15 s cold, mostly reading
    torch's and Bokeh's types; about 2 s warm)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kvviz" / "mypy"


@pytest.mark.slow
def test_the_typed_packages_pass_mypy_strict():
    checked = ["engine", "kernels", "vllm_watch", "kvviz/export", "kvviz/serve"]
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(mypy_cache()),
                           *checked], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mypy --strict {' '.join(checked)}:\n{proc.stdout}{proc.stderr}"


def test_the_snapshot_literals_are_the_enum_values():
    assert set(get_args(StatusName)) == {s.value for s in Status}
    assert set(get_args(StopName)) == {s.value for s in Stop}


def test_the_value_lists_are_unchanged():
    # what the page and the recordings see: plain strings, in this order
    assert BLOCK_STATES == ("free", "reserved", "tokens", "cached")
    assert EVENT_KINDS == ("request_added", "request_admitted", "request_refused", "request_preempted",
                           "request_finished", "request_released", "block_allocated", "block_freed",
                           "block_shared", "block_evicted")
