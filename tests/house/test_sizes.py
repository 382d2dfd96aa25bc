"""The house stays readable in an afternoon (issue 32): no source file over 400 lines outside data,
and the benchmarks no more than 2,500 lines (they measure the engine; they should not outgrow it)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = (".py", ".js", ".css")
DATA = ("assets", "docs", "tests/fixtures")  # (data and prose: weights, recordings, reference runs)
MAX_LINES, BENCHMARK_LINES = 400, 2_500


def sources(under: Path) -> list[Path]:
    """The project's own source files under `under`: not an environment, a cache or git's."""
    return [p for p in under.rglob("*") if p.suffix in SOURCE and p.is_file()
            and not any(part.startswith(".") or part in ("node_modules", "__pycache__")
                        for part in p.relative_to(ROOT).parts)]


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_source_file_over_400_lines():
    found = [p for p in sources(ROOT) if not p.relative_to(ROOT).as_posix().startswith(DATA)]
    assert len(found) > 100  # (the walk found the project)
    long = {p.relative_to(ROOT).as_posix(): n for p in found if (n := lines(p)) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: split each by what it does: {long}"


def test_benchmarks_at_most_2500_lines():
    total = sum(lines(p) for p in sources(ROOT / "benchmarks"))
    assert 1_000 < total <= BENCHMARK_LINES, f"benchmarks/ is {total} lines (at most {BENCHMARK_LINES})"
