"""The lesson installs on macOS (Apple silicon), Windows and Linux, on the CPU: every requirement's
marker is evaluated for each platform (tools/wheels.py's PLATFORMS) and checked against the
record of which wheels PyPI has there (tests/fixtures/wheels.json, made by `python -m
tools.wheels`), with no network. The lesson's own set holds nothing only the tests or a GPU need,
and runs with Triton absent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name, parse_wheel_filename

from tools.wheels import (
    GPU,
    LESSON,
    PLATFORMS,
    RECORD,
    TEST,
    for_platform,
    key,
    read_requirements,
    supported_tags,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads(RECORD.read_text())
STALE = (
    "the requirement files changed since tests/fixtures/wheels.json was made: run `python -m tools.wheels`")
# Only the tests need these; none belongs in the lesson's own install.
TEST_ONLY = {"pytest", "pytest-timeout", "pytest-xdist", "hypothesis", "ruff", "playwright",
             "pytest-playwright", "axe-playwright-python", "websockets", "safetensors", "import-linter",
             "mypy", "triton", "nbformat", "nbclient", "nbconvert", "ipykernel"}


def names(requirements) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements}


def test_the_record_covers_the_requirement_files_as_they_are():
    now = sorted(key(r) for r in read_requirements(LESSON) + read_requirements(GPU))
    assert RECORDED["requirements"] == now, STALE
    assert set(RECORDED["platforms"]) == set(PLATFORMS)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_requirement_kept_on_a_platform_has_a_wheel_there(platform):
    """Each requirement that the markers keep here has a recorded wheel (its extras' too) that
    CPython 3.11 installs on this platform and whose version the requirement allows."""
    supported = supported_tags(platform)
    record = RECORDED["platforms"][platform]
    for requirement in for_platform(read_requirements(LESSON) + read_requirements(GPU), platform):
        wheels = record[key(requirement)]
        assert isinstance(wheels, list) and wheels, f"{platform}: no wheel for {requirement} ({wheels})"
        assert not any(w.startswith("none") for w in wheels), f"{platform}: {requirement}: {wheels}"
        name, version, _, wheel_tags = parse_wheel_filename(wheels[0])
        assert name == canonicalize_name(requirement.name)
        assert requirement.specifier.contains(version, prereleases=True), (requirement, wheels[0])
        for wheel in wheels:
            assert parse_wheel_filename(wheel)[3] & supported, f"{platform} cannot install {wheel}"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_requirement_without_a_wheel_on_a_platform_is_left_out_there_by_its_marker(platform):
    """Where the record found no wheel (Triton on macOS and Windows), no requirement file's markers
    keep that requirement: neither the lesson's, the GPU set nor the test set."""
    missing = {k for k, wheels in RECORDED["platforms"][platform].items() if not isinstance(wheels, list)}
    for path in (LESSON, GPU, TEST):
        kept = {key(r) for r in for_platform(read_requirements(path), platform)}
        assert not kept & missing, (
            f"{path.name} asks for {kept & missing} on {platform}, which has no wheel for it")


def test_triton_has_wheels_on_linux_only_and_is_asked_for_there_only():
    recorded = {p: RECORDED["platforms"][p]["triton<4,>=3.4"] for p in PLATFORMS}
    assert isinstance(recorded["Linux x86-64"], list)
    assert not isinstance(recorded["macOS arm64"], list) and not isinstance(recorded["Windows x86-64"], list)
    for platform in PLATFORMS:
        in_tests = "triton" in names(for_platform(read_requirements(TEST), platform))
        assert in_tests == (platform == "Linux x86-64")  # (the tests run the kernels interpreted: Linux, CI)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_lesson_installs_nothing_only_tests_or_a_gpu_need(platform):
    lesson = names(for_platform(read_requirements(LESSON), platform))
    assert lesson & TEST_ONLY == set()
    assert {"torch", "panel", "bokeh", "numpy", "sqlalchemy", "psycopg"} <= lesson  # (and parsed whole)


def test_the_lesson_runs_without_triton():
    """With Triton hidden (as on a Mac), the engine picks its CPU backend on 'auto', generates,
    and the lesson's modules import; nothing imports triton. (The same interpreter as the tests,
    so the C kernel's availability is this machine's.)"""
    code = """
import importlib.abc, sys
class NoTriton(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "triton" or name.startswith("triton."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, NoTriton())
import torch
from engine import Engine, EngineConfig, ModelConfig
from engine.backend import select_backend, triton_installed
from kernels import cpu_native
assert not triton_installed()
expected = "native" if cpu_native.available() else "torch"
assert select_backend("auto", torch.device("cpu")).name == expected
tiny = ModelConfig(num_layers=1, d_model=32, num_heads=4, num_kv_heads=2, d_ff=64, max_seq_len=64)
engine = Engine(EngineConfig(num_blocks=8, block_size=4, backend="auto", device="cpu", model=tiny, weights="random"))
engine.add_request("abc", max_new_tokens=3)
while engine.has_unfinished():
    engine.step()
assert engine.snapshot().backend == expected
import kvviz.lesson, kvviz.export, kvviz.cli
try:
    select_backend("triton", torch.device("cpu"))
except ValueError as e:
    assert "Triton" in str(e) or "TRITON_INTERPRET" in str(e)
assert not any(m == "triton" or m.startswith("triton.") for m in sys.modules), "triton was imported"
print("ok")
"""  # noqa: E501 (data: a string kept as written)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
