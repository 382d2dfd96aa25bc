"""Contiguous max-length reservation versus paged KV, serving one long-tailed trace on one pool.

    python -m benchmarks.memory [--quick | --size tiny] [--json PATH] [--threads N]

The trace (fixed seed, all at t = 0, each request released when it finishes): lognormal input
and output lengths with ShareGPT's means (161 and 338 tokens, per the vLLM paper) scaled by
max_seq_len / 2048 (vLLM served ShareGPT on 2048-token OPT models), clipped so that input +
output <= max_seq_len. Both policies serve it on the same pool with admission='wait', one engine
step of each in turn: 'contiguous' reserves max_seq_len / block_size blocks a request, 'paged' a
block per block_size tokens as they come. Per policy: utilisation (tokens_held / slots_locked,
averaged over the steps where a slot is locked), peak_running, steps, wall_s, and decode_tok_s
(apart: the same decode_batch requests decoding decode_steps steps, alternating, median of
repeats). The targets (docs/benchmarks.md, "Memory") are set for the full size: the quick and
tiny traces are so short that paged admits everything at once.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import asdict, dataclass

from benchmarks import common
from benchmarks.common import SEED, engine_config, format_table, random_text, ratio
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
            raise ValueError(f"decode_batch must be in [1, {slabs}]: {slabs} contiguous requests fit")


# (requests, blocks, max_seq_len, decode_batch, decode_steps, decode_repeats)
SIZES = {"full": Size(200, 1024, 1024, 8, 64, 5), "quick": Size(32, 128, 512, 4, 16, 3),
         "tiny": Size(16, 64, 256, 4, 4, 1)}


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
    return engine_config(num_blocks=size.num_blocks, block_size=BLOCK_SIZE, policy=policy, admission="wait",
                         reserve_blocks=size.max_seq_len // BLOCK_SIZE,
                         model=ModelConfig(max_seq_len=size.max_seq_len))


class TraceRun:
    """One policy serving the whole trace on a reset engine, one `step` at a time (so that two
    runs take turns): metrics sampled after every step and its releases."""

    def __init__(self, engine: Engine, trace: list[TraceRequest]):
        engine.reset()
        self.engine = engine
        self.unfinished = {engine.add_request(r.prompt, r.max_new_tokens) for r in trace}
        self.utilisations: list[float] = []
        self.peak_running = 0
        self.wall_s = 0.0

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
        return RunResult(statistics.fmean(self.utilisations), self.peak_running, m.steps, self.wall_s,
                         m.preempted, m.prefill_tokens_computed, m.prefill_seconds)


def serve_side_by_side(engines: dict[str, Engine], trace: list[TraceRequest]) -> dict[str, RunResult]:
    """Serve the trace under every policy, one engine step of each in turn until all finish."""
    runs = {p: TraceRun(e, trace) for p, e in engines.items()}
    while any(r.unfinished for r in runs.values()):
        for r in runs.values():
            if r.unfinished:
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
        return {"mean": statistics.fmean(xs), "median": statistics.median(xs),
                "p99": xs[int(0.99 * (len(xs) - 1))], "max": xs[-1]}

    scale = max_seq_len / SHAREGPT_CONTEXT
    return {"num_requests": len(trace), "arrival": "all requests at t=0",
            "distribution": (
                f"lognormal(sigma={LENGTH_SIGMA}) input mean {SHAREGPT_MEAN_INPUT * scale:.1f}, output mean "
                f"{SHAREGPT_MEAN_OUTPUT * scale:.1f} (ShareGPT x {max_seq_len}/{SHAREGPT_CONTEXT}); "
                f"input clipped to [1, {max_seq_len - 1}], output to [1, {max_seq_len} - input]"),
            "seed": SEED, "input_tokens": stats([len(r.prompt) for r in trace]),
            "output_tokens": stats([r.max_new_tokens for r in trace])}


def run(size: Size, num_threads: int) -> dict:
    trace = make_trace(size.num_requests, size.max_seq_len)
    engines = {p: Engine(policy_config(p, size)) for p in POLICIES}
    warm_up(engines, size)
    results = serve_side_by_side(engines, trace)
    tok_s = decode_tokens_per_second(engines, size)
    cfg = engines["paged"].config
    config = {k: getattr(cfg, k) for k in ("num_blocks", "block_size", "admission", "max_running", "backend",
                                           "device", "weights", "seed")}
    config.update(max_seq_len=size.max_seq_len, contiguous_reserve_blocks=size.max_seq_len // BLOCK_SIZE,
                  torch_threads=num_threads, decode_batch=size.decode_batch, decode_steps=size.decode_steps,
                  decode_prompt_tokens=DECODE_PROMPT_TOKENS, decode_repeats=size.decode_repeats)
    out = {"benchmark": "memory", "config": config, "trace": trace_summary(trace, size.max_seq_len)}
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
    rows = [("utilisation (time-avg)", "utilisation"), ("peak running requests", "peak_running"),
            ("engine steps", "steps"), ("wall time (s)", "wall_s"),
            ("  of which prefill forwards (s)", "prefill_s"),
            (f"decode tok/s (batch {out['config']['decode_batch']})", "decode_tok_s"),
            ("preemptions", "preempted"), ("prefill tokens computed", "prefill_tokens")]
    return format_table(["", "contiguous", "paged", "paged/contig"],
                        [[name, c[key], g[key], ratio(g[key], c[key])] for name, key in rows])


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
