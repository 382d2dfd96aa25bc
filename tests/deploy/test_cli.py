"""The `kvviz` command (kvviz/cli.py): `kvviz --help` and each command's, `python -m kvviz`, the
`panel serve` command line that `kvviz lesson` runs, and `pip install` giving the command. No
server is started here (tests/ui/ serves the lesson the same way)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvviz import cli

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: int = 120):
    return subprocess.run([*args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def test_python_m_kvviz_help_lists_the_four_commands():
    done = run(sys.executable, "-m", "kvviz", "--help")
    assert done.returncode == 0, done.stderr
    for command in ("lesson", "class", "export", "vllm"):
        assert command in done.stdout


@pytest.mark.parametrize("command,says", [
    ("lesson", "--address"),
    ("class", "--backends"),  # deploy/class_server.py's own options
    ("export", "--live-url"),  # kvviz.export's
    ("vllm", "--num-blocks"),  # tools/vllm_server.py's
])
def test_each_command_has_help(command, says):
    done = run(sys.executable, "-m", "kvviz", command, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and says in done.stdout


def test_an_unknown_command_is_refused():
    done = run(sys.executable, "-m", "kvviz", "lecture")
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_lesson_serves_what_make_lesson_served():
    argv = cli.lesson_argv(port=5006, address="localhost", procs=1, python="PY")
    assert argv == ["PY", "-m", "panel", "serve", "app.py", "teacher.py", "--port", "5006", "--address",
                    "localhost",
                    "--num-procs", "1", "--allow-websocket-origin", "localhost:5006", "--static-dirs",
                    "assets=./assets", "--plugins", "kvviz.serve.routes",
                    "--setup", "on_start.py"]
    assert all((ROOT / f).is_file() for f in ("app.py", "teacher.py")) and (ROOT / "assets").is_dir()


def test_lesson_for_a_class_allows_any_origin_unless_told():
    argv = cli.lesson_argv(port=8080, address="0.0.0.0", procs=2)
    assert argv[argv.index("--allow-websocket-origin") + 1] == "*"
    assert argv[argv.index("--port") + 1] == "8080" and argv[argv.index("--num-procs") + 1] == "2"
    argv = cli.lesson_argv(address="0.0.0.0", allow="192.0.2.7:5006")
    assert argv[argv.index("--allow-websocket-origin") + 1] == "192.0.2.7:5006"


def test_lesson_parses_its_options_into_that_command():
    args = cli.parser().parse_args(["lesson", "--address", "0.0.0.0", "--port", "5010"])
    assert (args.address, args.port, args.procs, args.allow, args.run) == ("0.0.0.0", 5010, 1, None,
                                                                           cli.cmd_lesson)
    assert "<this computer's address>:5010" in cli.students_url("0.0.0.0", 5010)
    assert cli.students_url("localhost", 5006) == "http://localhost:5006/"


def test_the_makefile_targets_run_the_command():
    makefile = (ROOT / "Makefile").read_text()
    for command in ("lesson", "class", "export", "vllm"):
        assert f"-m kvviz {command}" in makefile


def test_importing_the_cli_imports_only_the_standard_library():
    code = ("import sys; before = set(sys.modules); import kvviz.cli; "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "print(sorted(new - set(sys.stdlib_module_names) - {'kvviz'}))")
    done = run(sys.executable, "-c", code)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_pip_install_gives_the_kvviz_command(tmp_path):
    """`pip install` of a copy of the checkout (no dependencies, no network: this environment's
    setuptools) puts a `kvviz` script in place that runs."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "requirements.txt", "requirements-gpu.txt"):
        shutil.copy(ROOT / name, src / name)
    for name in ("kvviz", "engine", "kernels", "tools", "vllm_watch"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "target"
    done = run(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
               "--no-index", "--target", str(target), str(src), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    script = target / "bin" / "kvviz"
    assert script.is_file()
    env = os.environ | {"PYTHONPATH": str(target)}
    done = run(str(script), "--help", cwd=tmp_path, env=env)
    assert done.returncode == 0 and "lesson" in done.stdout, done.stderr
    done = run(str(script), "lesson", "--help", cwd=tmp_path, env=env)
    assert done.returncode == 0 and "--address" in done.stdout, done.stderr
    assert (target / "kernels" / "cpu" / "paged_decode.c").is_file()  # (package data: the C kernel's source)
    assert (target / "kvviz" / "export" / "player.js").is_file()
    assert (target / "vllm_watch" / "monitor.py").is_file()  # (the vLLM watcher, which node 04 imports)


def test_the_first_recordings_progress_is_printed_until_it_is_ready(tmp_path):
    """`kvviz lesson` prints a line each time the recording moves on, then one when it is ready,
    from what kvviz/export/cache.py's recording writes (here written by the test)."""
    import io
    import threading

    from kvviz.export import cache

    root, key, out, stop = tmp_path, "k123", io.StringIO(), threading.Event()
    watcher = threading.Thread(target=cli.watch_recording,
                               args=("http://localhost:5006/", stop, root, key, 0.05, out))
    watcher.start()
    cache.write_progress(root, key,
                         {"what": "node 01 · Fragmentation", "done": 0, "total": 4, "seconds": 0.1})
    deadline = time.monotonic() + 10
    while "node 01" not in out.getvalue() and time.monotonic() < deadline:
        stop.wait(0.05)
    cache.write_progress(root, key,
                         {"what": "node 02 · PagedAttention", "done": 1, "total": 4, "seconds": 20})
    while "node 02" not in out.getvalue() and time.monotonic() < deadline:
        stop.wait(0.05)
    (root / key).mkdir()
    (root / key / "index.html").write_text("<html></html>")
    watcher.join(timeout=10)
    stop.set()
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "recording node 01 · Fragmentation… 0% (part 1 of 4), the live lesson at /app meanwhile")
    assert lines[1] == (
        "recording node 02 · PagedAttention… 25% (part 2 of 4), the live lesson at /app meanwhile")
    assert (lines[2].startswith("The recorded lesson is ready (")
            and lines[2].endswith("s): http://localhost:5006/"))
    assert len(lines) == 3 and not watcher.is_alive()


def test_a_ready_recording_prints_nothing(tmp_path):
    import io
    import threading

    (tmp_path / "k1").mkdir()
    (tmp_path / "k1" / "index.html").write_text("<html></html>")
    out = io.StringIO()
    cli.watch_recording("http://localhost:5006/", threading.Event(), tmp_path, "k1", 0.01, out)
    assert out.getvalue() == ""
