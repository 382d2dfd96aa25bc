"""Contiguous max-length reservation versus paged KV, serving one long-tailed trace on one pool.

    python -m benchmarks.memory [--quick | --size tiny] [--json PATH] [--threads N]

The trace (fixed seed): input and output lengths are lognormal with sigma LENGTH_SIGMA and means
ShareGPT's (161 input, 338 output tokens, per the vLLM paper), scaled by max_seq_len / 2048:
vLLM served ShareGPT on 2048-token OPT models, so the scaling keeps the same ratio of request
length to context (at 1024: means 80 and 169). Then input is clipped to [1, max_seq_len - 1] and
output to [1, max_seq_len - input], so input + output <= max_seq_len. Every request arrives at
t = 0 and is released as soon as it finishes.

Each policy serves the same trace on the same pool with admission='wait': 'contiguous' reserves
max_seq_len / block_size blocks per request (the model's maximum length), 'paged' one block per
block_size tokens as they come. The two runs are interleaved one engine step at a time, so
that whatever else the machine does falls on both alike. Reported per policy:

    utilisation   mean over steps of metrics.utilisation (tokens_held / slots_locked), sampled
                  after each step and its releases, over the steps where some slot is locked
    peak_running  most requests running at once
    steps         engine steps until every request has finished
    wall_s        wall time of those steps and releases (metrics sampling not included)
    decode_tok_s  a separate measurement at equal batch: the same decode_batch requests
                  decoding decode_steps steps under each policy, alternating, median of repeats

The targets (paged utilisation >= 0.96, contiguous in vLLM's 0.20-0.40 band, paged in at most
half the steps) are set for the full size. The quick and tiny traces are short enough that the
paged run admits everything at once and is bound by its single longest request.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import asdict, dataclass

from benchmarks import common
from benchmarks.common import (
    SEED,
    engine_config,
    format_table,
    random_text,
    ratio,
)
from engine import Engine, EngineConfig, ModelConfig
from engine.request import Status

BLOCK_SIZE = 16
SHAREGPT_MEAN_INPUT = 161  # tokens, vLLM paper (Kwon et al., 2023), ShareGPT
SHAREGPT_MEAN_OUTPUT = 338
SHAREGPT_CONTEXT = 2048  # the OPT models vLLM served ShareGPT on
LENGTH_SIGMA = 1.0  # lognormal shape: median = 0.61 x mean, a long tail
DECODE_PROMPT_TOKENS = 80  # the equal-batch decode measurement's prompt: the trace's mean input
POLICIES = ("contiguous", "paged")


@dataclass(frozen=True)
class Size:
    num_requests: int
    num_blocks: int  # the pool, shared by both policies
    max_seq_len: int  # the model's context; contiguous reserves all of it
    decode_batch: int
    decode_steps: int
    decode_repeats: int

    def __post_init__(self) -> None:
        slabs = self.num_blocks // (self.max_seq_len // BLOCK_SIZE)
        if not 1 <= self.decode_batch <= slabs:
            raise ValueError(
                f"decode_batch must be in [1, {slabs}]: the contiguous pool holds {slabs} requests"
            )


SIZES = {
    "full": Size(
        num_requests=200, num_blocks=1024, max_seq_len=1024, decode_batch=8, decode_steps=64, decode_repeats=5
    ),
    "quick": Size(
        num_requests=32, num_blocks=128, max_seq_len=512, decode_batch=4, decode_steps=16, decode_repeats=3
    ),
    "tiny": Size(
        num_requests=16, num_blocks=64, max_seq_len=256, decode_batch=4, decode_steps=4, decode_repeats=1
    ),
}


@dataclass(frozen=True)
class TraceRequest:
    prompt: bytes
    max_new_tokens: int  # = its output length: the random model never stops early


@dataclass(frozen=True)
class RunResult:
    utilisation: float
    peak_running: int
    steps: int
    wall_s: float
    preempted: int  # paged only: requests preempted (and recomputed) when the pool ran dry
    prefill_tokens: int  # includes recomputation after preemption
    prefill_s: float  # of wall_s, the time in prefill forwards (metrics.prefill_seconds)


def make_trace(num_requests: int, max_seq_len: int, seed: int = SEED) -> list[TraceRequest]:
    """The fixed-seed long-tailed trace described in the module docstring."""
    rng = random.Random(seed)
    scale = max_seq_len / SHAREGPT_CONTEXT
    trace = []
    for _ in range(num_requests):
        num_in = _clip(_lognormal(rng, SHAREGPT_MEAN_INPUT * scale), 1, max_seq_len - 1)
        num_out = _clip(_lognormal(rng, SHAREGPT_MEAN_OUTPUT * scale), 1, max_seq_len - num_in)
        trace.append(TraceRequest(random_text(rng, num_in), num_out))
    return trace


def _lognormal(rng: random.Random, mean: float) -> float:
    return rng.lognormvariate(math.log(mean) - LENGTH_SIGMA**2 / 2, LENGTH_SIGMA)


def _clip(x: float, lo: int, hi: int) -> int:
    return min(max(round(x), lo), hi)


def policy_config(policy: str, size: Size) -> EngineConfig:
    return engine_config(
        num_blocks=size.num_blocks,
        block_size=BLOCK_SIZE,
        policy=policy,
        reserve_blocks=size.max_seq_len // BLOCK_SIZE,
        admission="wait",
        model=ModelConfig(max_seq_len=size.max_seq_len),
    )


class TraceRun:
    """One policy serving the whole trace on a reset engine: all requests added at once, each
    released as soon as it finishes, metrics sampled after every step and its releases.

    `step` advances it by one engine step, so that two runs can be interleaved step by step and
    share whatever else the machine is doing."""

    def __init__(self, engine: Engine, trace: list[TraceRequest]):
        engine.reset()
        self.engine = engine
        self.unfinished = {engine.add_request(r.prompt, r.max_new_tokens) for r in trace}
        self.utilisations: list[float] = []
        self.peak_running = 0
        self.wall_s = 0.0

    @property
    def is_done(self) -> bool:
        return not self.unfinished

    def step(self) -> None:
        engine = self.engine
        t0 = time.perf_counter()
        engine.step()
        done = {rid for rid in self.unfinished if engine.requests[rid].status is Status.FINISHED}
        for rid in done:
            engine.release(rid)
        self.wall_s += time.perf_counter() - t0
        self.unfinished -= done
        m = engine.metrics()
        self.peak_running = max(self.peak_running, m.num_running)
        if m.slots_locked:
            self.utilisations.append(m.utilisation)
        if self.unfinished and not engine.has_unfinished():
            raise RuntimeError(f"the engine went idle with {len(self.unfinished)} requests unfinished")

    def result(self) -> RunResult:
        m = self.engine.metrics()
        return RunResult(
            statistics.fmean(self.utilisations),
            self.peak_running,
            m.steps,
            self.wall_s,
            m.preempted,
            m.prefill_tokens_computed,
            m.prefill_seconds,
        )


def serve_side_by_side(engines: dict[str, Engine], trace: list[TraceRequest]) -> dict[str, RunResult]:
    """Serve the trace under every policy, one engine step of each in turn until all finish."""
    runs = {p: TraceRun(e, trace) for p, e in engines.items()}
    while not all(r.is_done for r in runs.values()):
        for r in runs.values():
            if not r.is_done:
                r.step()
    return {p: r.result() for p, r in runs.items()}


def decode_tokens_per_second(engines: dict[str, Engine], size: Size) -> dict[str, float]:
    """Median decode tokens/s of the same fixed batch under each policy, policies alternating."""
    rng = random.Random(SEED + 1)
    prompts = [random_text(rng, DECODE_PROMPT_TOKENS) for _ in range(size.decode_batch)]
    samples: dict[str, list[float]] = {p: [] for p in engines}
    for _ in range(size.decode_repeats):
        for policy, engine in engines.items():
            engine.reset()
            # One more token than the decode steps: the prefill samples the first.
            ids = [engine.add_request(p, size.decode_steps + 1) for p in prompts]
            engine.step()  # admits and prefills the whole batch
            assert all(engine.requests[i].status is Status.RUNNING for i in ids), "the batch did not fit"
            t0 = time.perf_counter()
            for _ in range(size.decode_steps):
                engine.step()
            elapsed = time.perf_counter() - t0
            assert all(engine.requests[i].status is Status.FINISHED for i in ids)
            samples[policy].append(size.decode_batch * size.decode_steps / elapsed)
    return {p: statistics.median(s) for p, s in samples.items()}


def warm_up(engines: dict[str, Engine], size: Size) -> None:
    short = [TraceRequest(r.prompt[:8], 4) for r in make_trace(4, size.max_seq_len, SEED + 2)]
    serve_side_by_side(engines, short)


def trace_summary(trace: list[TraceRequest], max_seq_len: int) -> dict:
    def stats(xs: list[int]) -> dict:
        xs = sorted(xs)
        return {
            "mean": statistics.fmean(xs),
            "median": statistics.median(xs),
            "p99": xs[int(0.99 * (len(xs) - 1))],
            "max": xs[-1],
        }

    scale = max_seq_len / SHAREGPT_CONTEXT
    return {
        "num_requests": len(trace),
        "arrival": "all requests at t=0",
        "distribution": (
            f"lognormal(sigma={LENGTH_SIGMA}) input mean {SHAREGPT_MEAN_INPUT * scale:.1f}, output mean "
            f"{SHAREGPT_MEAN_OUTPUT * scale:.1f} (ShareGPT x {max_seq_len}/{SHAREGPT_CONTEXT}); "
            f"input clipped to [1, {max_seq_len - 1}], output to [1, {max_seq_len} - input]"
        ),
        "seed": SEED,
        "input_tokens": stats([len(r.prompt) for r in trace]),
        "output_tokens": stats([r.max_new_tokens for r in trace]),
    }


def run(size: Size, num_threads: int) -> dict:
    trace = make_trace(size.num_requests, size.max_seq_len)
    engines = {p: Engine(policy_config(p, size)) for p in POLICIES}
    warm_up(engines, size)
    results = serve_side_by_side(engines, trace)
    tok_s = decode_tokens_per_second(engines, size)
    cfg = engines["paged"].config
    out = {
        "benchmark": "memory",
        "config": {
            "num_blocks": cfg.num_blocks,
            "block_size": cfg.block_size,
            "max_seq_len": size.max_seq_len,
            "contiguous_reserve_blocks": size.max_seq_len // BLOCK_SIZE,
            "admission": cfg.admission,
            "max_running": cfg.max_running,
            "backend": cfg.backend,
            "device": cfg.device,
            "weights": cfg.weights,
            "seed": cfg.seed,
            "torch_threads": num_threads,
            "decode_batch": size.decode_batch,
            "decode_steps": size.decode_steps,
            "decode_prompt_tokens": DECODE_PROMPT_TOKENS,
            "decode_repeats": size.decode_repeats,
        },
        "trace": trace_summary(trace, size.max_seq_len),
    }
    for p in POLICIES:
        out[p] = asdict(results[p]) | {"decode_tok_s": tok_s[p]}
    c, g = out["contiguous"], out["paged"]
    out["targets"] = {
        "paged_utilisation_at_least_0.96": g["utilisation"] >= 0.96,
        "contiguous_utilisation_in_0.20_0.40": 0.20 <= c["utilisation"] <= 0.40,
        "paged_steps_at_most_half": g["steps"] <= c["steps"] / 2,
    }
    return out


def table(out: dict) -> str:
    c, g = out["contiguous"], out["paged"]
    rows = [
        [name, c[key], g[key], ratio(g[key], c[key])]
        for name, key in [
            ("utilisation (time-avg)", "utilisation"),
            ("peak running requests", "peak_running"),
            ("engine steps", "steps"),
            ("wall time (s)", "wall_s"),
            ("  of which prefill forwards (s)", "prefill_s"),
            (f"decode tok/s (batch {out['config']['decode_batch']})", "decode_tok_s"),
            ("preemptions", "preempted"),
            ("prefill tokens computed", "prefill_tokens"),
        ]
    ]
    return format_table(["", "contiguous", "paged", "paged/contig"], rows)


def heading(out: dict, size, threads: int) -> str:
    t = out["trace"]
    return (f"memory ({out['size']}): {t['num_requests']} requests, all at t=0, on {size.num_blocks} "
            f"blocks x {BLOCK_SIZE}; input mean {t['input_tokens']['mean']:.0f} / output mean "
            f"{t['output_tokens']['mean']:.0f} tokens; contiguous reserves {size.max_seq_len} tokens; "
            f"torch threads {threads}")


def main(argv: list[str] | None = None) -> dict:
    return common.main(argv, __doc__.splitlines()[0], SIZES, run, heading, table)


if __name__ == "__main__":
    main()
