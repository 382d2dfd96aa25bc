"""Every JavaScript file of the lesson parses (node --check): the components' ES modules, the
player's script, and CustomJS bodies (checked inside a function, as Bokeh runs them)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "kvviz").rglob("*.js"))
CUSTOMJS = {"reflow.js"}  # (bodies of Bokeh CustomJS callbacks: `return` at their top level)


def test_the_javascript_lives_in_files():
    assert len(FILES) >= 10
    for path in ROOT.joinpath("kvviz").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "export function render" not in text, f"{path}: JavaScript in a Python string"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_file_parses(path, tmp_path):
    node = shutil.which("node")
    if node is None:  # (`make test` installs Debian's nodejs: under CI a missing one fails)
        if os.environ.get("CI"):
            pytest.fail("Node.js is not installed: `make nodejs` installs it")
        pytest.skip("Node.js is not installed (`make nodejs`): JavaScript syntax is not checked here")
    text = path.read_text(encoding="utf-8")
    if path.name in CUSTOMJS:
        check, args = tmp_path / "body.js", []
        check.write_text(f"(function (cb_obj, cb_data) {{\n{text}\n}});\n", encoding="utf-8")
    elif "export " in text:
        check, args = tmp_path / "module.mjs", []
        check.write_text(text, encoding="utf-8")
    else:
        check, args = path, []
    done = subprocess.run([node, "--check", *args, str(check)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
