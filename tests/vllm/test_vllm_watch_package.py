"""The watcher as a package: what the launcher imports with vLLM's own Python (tools/vllm_server.py:
vllm_watch/defaults.py) is the standard library only, and the whole watcher loads with neither
Panel nor anything of the lesson (import-linter's layers say so of imports; this says so of
sys.modules, third-party libraries included)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WATCHER = sorted(f"vllm_watch.{p.stem}" for p in (ROOT / "vllm_watch").glob("*.py") if p.stem != "__init__")


def loaded_by(*modules: str) -> set[str]:
    """The top-level packages importing `modules` adds to a fresh interpreter's sys.modules."""
    code = ("import importlib, json, sys; before = set(sys.modules)\n"
            f"for m in {list(modules)!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def test_the_launchers_settings_are_standard_library_only():
    loaded = loaded_by("vllm_watch", "vllm_watch.defaults", "tools.vllm_server")
    assert loaded - set(sys.stdlib_module_names) == {"vllm_watch", "tools"}


def test_the_watcher_loads_without_panel_or_the_lesson():
    assert len(WATCHER) >= 10
    loaded = loaded_by(*WATCHER)
    assert not loaded & {"panel", "bokeh", "param", "kvviz", "engine", "kernels", "tools", "torch"}, loaded
