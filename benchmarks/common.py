"""What the benchmarks share: one engine setup, one command line, tables and JSON, percentiles.

Every benchmark measures configurations side by side in one process, on the CPU, with one
attention backend (`torch`, unless the benchmark says otherwise), random weights and a fixed seed,
so that two runs differ only in what the benchmark compares.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import string
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine import EngineConfig

# (torch and the engine are imported where used: the browser and classroom benchmarks need neither)

SEED = 0
NUM_THREADS = 1  # torch intra-op threads: one, so that timings hold on a shared 2-core machine
SIZES = ("full", "quick", "tiny")  # full: the reported numbers; quick: CI (< 60 s); tiny: the tests


def engine_config(**overrides) -> EngineConfig:
    """The benchmarks' engine: CPU, torch backend (unless `overrides` name another), seeded random
    weights; `overrides` on top."""
    from engine import EngineConfig

    return EngineConfig(**{"backend": "torch", "device": "cpu", "weights": "random", "seed": SEED,
                           **overrides})


def parser(description: str, backend: str | None = None, sizes=SIZES,
           threads: bool = True) -> argparse.ArgumentParser:
    """The common flags (`--size` of `sizes`, `--quick`, `--json`, `--threads` unless not
    `threads`); `--backend` too when the benchmark has a `backend` (its default)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--size", choices=sizes, default="full", help="workload size (default: full)")
    p.add_argument("--quick", dest="size", action="store_const", const="quick", help="same as --size quick")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    if threads:
        p.add_argument("--threads", type=int, default=NUM_THREADS,
                       help=f"torch threads (default: {NUM_THREADS})")
    if backend is not None:
        p.add_argument("--backend", choices=("auto", "torch", "native"), default=backend,
                       help=f"the engine's attention backend (default: {backend})")
    return p


def main(argv: list[str] | None, description: str, sizes: dict, run, heading, table,
         backend: str | None = None) -> dict:
    """What `python -m benchmarks.memory` and `.prefix` do: parse the common flags, run the
    workload of the chosen size (`run(size, threads)`, or `run(size, threads, backend)` for a
    benchmark with a `backend`), print `heading(out, size, threads)`, the `table(out)` and the
    targets, and write the JSON if asked; returns the results."""
    args = parser(description, backend).parse_args(argv)
    set_threads(args.threads)
    size = sizes[args.size]
    out = run(size, args.threads) if backend is None else run(size, args.threads, args.backend)
    out["size"] = args.size
    print(heading(out, size, args.threads) + "\n")
    print(table(out))
    print("\n" + format_targets(out["targets"], args.size))
    if args.json:
        write_json(args.json, out)
    return out


def set_threads(num_threads: int) -> None:
    if num_threads < 1:
        raise ValueError(f"--threads must be >= 1, got {num_threads}")
    import torch

    torch.set_num_threads(num_threads)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), linear between closest ranks (numpy's default)."""
    import numpy as np

    return float(np.percentile(values, q))


def random_text(rng: random.Random, num_tokens: int) -> bytes:
    """`num_tokens` bytes of lowercase letters and spaces: exactly that many byte-tokenizer tokens."""
    return "".join(rng.choices(string.ascii_lowercase + " ", k=num_tokens)).encode()


def format_table(header: list[str], rows: list[list]) -> str:
    """A plain-text table: first column left-aligned, the rest right-aligned."""
    cells = [header] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        first = row[0].ljust(widths[0])
        return "  ".join([first] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)])

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def format_targets(targets: dict[str, bool], size: str) -> str:
    """One line: each target and whether it was met (the targets are set for the full size)."""
    met = ", ".join(f"{name} {'met' if ok else 'NOT met'}" for name, ok in targets.items())
    return f"targets (set for size full; this is {size}): {met}"


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator; None (shown as '-') when the denominator or numerator is 0."""
    return numerator / denominator if numerator and denominator else None


def machine(load_before: tuple[float, ...]) -> dict:
    """The machine, probably shared: its platform and cores, the load average before and now."""
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()]}


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
