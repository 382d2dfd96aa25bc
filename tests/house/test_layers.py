"""The import graph (docs/architecture.md, "Layers"): the contracts in pyproject.toml, checked by
import-linter; no import cycle; every module of kvviz/, engine/, kernels/, tools/ and vllm_watch/
importing on its own (no module depends on another of ours having been imported first)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kvviz", "engine", "kernels", "tools", "vllm_watch")


def modules() -> list[str]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__main__":
                continue  # (runs the command: `python -m kvviz.export` imports kvviz.export)
            out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_the_import_contracts_hold():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert lint is not None, "lint-imports is not installed (requirements-test.txt: import-linter)"
    done = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_graph_has_no_cycle():
    """No import cycle among kvviz's modules, as grimp (import-linter's graph) reads them: imports
    inside functions included, so a cycle cannot hide in a deferred import."""
    grimp = pytest.importorskip("grimp")
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    order, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        order[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for m in sorted(graph.modules):
        if m not in order:
            visit(m)
    assert cycles == []


# Each module imported alone: a driver process imports the heavy third-party libraries once (torch,
# Panel, Bokeh, SQLAlchemy: none of this project's modules), then forks one child per module, which
# imports that module into a sys.modules holding nothing of ours (PACKAGES): whether a module needs
# another of ours imported first is what is checked, in a second rather than three. (bokeh.plotting,
# which makes its glyph methods at import, and SQLAlchemy, which the class store pulls into most of
# kvviz, were half of each child's time: 33 s of CPU in all without them, 17 s with them.)
DRIVER = """
import importlib, json, os, sys, traceback
for lib in ("torch", "numpy", "param", "bokeh.models", "bokeh.plotting", "bokeh.layouts", "bokeh.transform",
            "panel", "prometheus_client", "prometheus_client.parser", "zmq", "msgspec", "sqlalchemy",
            "sqlite3"):
    try:
        importlib.import_module(lib)
    except ImportError:
        pass
ours = [m for m in sys.modules if m.split(".")[0] in ("kvviz", "engine", "kernels", "tools", "vllm_watch")]
assert not ours, ours
failed = {}
for name in json.loads(sys.argv[1]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
            code = 0
        except BaseException:
            os.write(write, traceback.format_exc(limit=-3).encode()[-3000:])
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if status:
        failed[name] = said or f"exit status {status}"
print(json.dumps(failed))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_every_module_imports_on_its_own():
    names = modules()
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(names)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    failed = json.loads(done.stdout.strip().splitlines()[-1])
    assert failed == {}, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())


def test_the_module_list_is_whole():
    found = modules()
    assert "kvviz.controls.transport" in found and "kvviz.nodes" in found and "engine.engine" in found
    assert "tools.train" in found and "kernels.reference" in found and len(found) > 120


def test_the_server_never_imports_the_site_writer():
    """What serves (kvviz/serve/: routes.py, live.py) reads what a page and a live answer share
    from kvviz/export/ (page_models.py, record.py, recipes.py, cache_folder.py), never what builds
    the pages or makes the served recording (issue 28; pyproject.toml's contract "serve" holds it
    for every import, this for what importing the server loads)."""
    import os
    import subprocess
    import sys

    building = ["kvviz.export.site", "kvviz.export.walk", "kvviz.export.player", "kvviz.export.checks",
                "kvviz.export.standalone", "kvviz.export.cache"]
    code = ("import json, sys, kvviz.serve.live, kvviz.serve.routes; "
            f"print(json.dumps([m for m in {building!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "KVVIZ_RECORDINGS": "off"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
