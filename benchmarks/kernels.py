"""Paged decode attention on the GPU: Triton kernel vs torch SDPA vs the torch paged reference.

    python -m benchmarks.kernels [--quick] [--json PATH] [--peak-gbs GBS]   # CUDA only, else exits 0

One decode step for `batch` sequences of `context` cached tokens, a Llama-3-8B attention layer
(32 query heads, 8 KV heads, head_dim 128), blocks of 16, fp16 and bf16: `triton` (the kernel, K/V
through shuffled block tables), `sdpa` (torch SDPA on the same K/V laid out contiguously, a group's
query heads as its query rows: each KV head read once, as the kernel does) and `ref` (the torch
paged reference, small sizes only). Time: triton.testing.do_bench's median (p20, p80 in the JSON);
bandwidth: the K and V bytes read over it, and its share of the device's peak (PEAK_GBS or
--peak-gbs); `err`: the largest |triton - sdpa|. Past a wall-clock budget, configurations are skipped.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from dataclasses import asdict, dataclass, field

import torch

from benchmarks import common
from benchmarks.common import format_table

NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK_SIZE = 32, 8, 128, 16
# batch * context cap: K+V of 2M tokens is 8.6 GB at 2 bytes, twice that with SDPA's copy
MAX_TOKENS = 1 << 21
MAX_REF_TOKENS = 1 << 15  # the reference materialises float32 K/V per query head
# Peak HBM bandwidth in GB/s, matched by substring of torch.cuda.get_device_name, first match wins.
PEAK_GBS = [("GH200", 4000.0), ("H200", 4800.0), ("H100 PCIe", 2000.0), ("H100 NVL", 3900.0),
            ("H100", 3350.0), ("B200", 8000.0), ("A100-SXM4-80GB", 2039.0), ("A100 80GB PCIe", 1935.0),
            ("A100", 1555.0), ("L40S", 864.0), ("L4", 300.0), ("A10", 600.0), ("RTX 4090", 1008.0)]


@dataclass(frozen=True)
class Plan:
    dtypes: tuple[torch.dtype, ...]
    batches: tuple[int, ...]
    contexts: tuple[int, ...]
    warmup_ms: int
    rep_ms: int
    budget_s: float  # stop starting new configurations after this much wall time


PLANS = {
    "full": Plan((torch.float16, torch.bfloat16), (1, 8, 32, 128, 256), (512, 2048, 8192, 32768), 25, 100,
                 150.0),
    "quick": Plan((torch.float16, torch.bfloat16), (1, 32), (1024, 16384), 10, 30, 45.0),
}


@dataclass
class Result:
    dtype: str
    batch: int
    context: int
    kv_bytes: int
    num_splits: int
    ms: dict[str, float] = field(default_factory=dict)  # impl -> median ms
    ms_p20: dict[str, float] = field(default_factory=dict)
    ms_p80: dict[str, float] = field(default_factory=dict)
    gbs: dict[str, float] = field(default_factory=dict)  # impl -> achieved GB/s
    pct_peak: dict[str, float] = field(default_factory=dict)
    max_abs_err: float | None = None  # triton vs sdpa
    errors: dict[str, str] = field(default_factory=dict)  # impl -> what went wrong


def peak_gbs_for(device_name: str) -> float | None:
    return next((gbs for key, gbs in PEAK_GBS if key in device_name), None)


class PagedCache:
    """One K and one V cache per dtype, big enough for the largest configuration; each configuration
    takes a random subset of its blocks in shuffled order."""

    def __init__(self, dtype: torch.dtype, max_tokens: int, device: torch.device):
        shape = (max_tokens // BLOCK_SIZE, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
        self.k = torch.randn(shape, dtype=dtype, device=device)
        self.v = torch.randn(shape, dtype=dtype, device=device)

    def block_tables(self, batch: int, context: int) -> torch.Tensor:
        num_pages = context // BLOCK_SIZE
        perm = torch.randperm(self.k.shape[0], device=self.k.device)[: batch * num_pages]
        return perm.view(batch, num_pages).to(torch.int32)  # (batch, num_pages)

    def contiguous(self, cache: torch.Tensor, block_tables: torch.Tensor) -> torch.Tensor:
        """The same K or V laid out as (batch, kv_heads, context, head_dim)."""
        batch = block_tables.shape[0]
        paged = cache[block_tables.long()]  # (batch, num_pages, block_size, kv_heads, head_dim)
        return paged.view(batch, -1, NUM_KV_HEADS, HEAD_DIM).transpose(1, 2).contiguous()


def run_config(cache: PagedCache, dtype: torch.dtype, batch: int, context: int, plan: Plan,
               peak: float | None) -> Result:
    import triton.testing

    from kernels import paged_decode_attention
    from kernels.decode_attention import choose_num_splits
    from kernels.reference import paged_decode_attention_ref

    device = cache.k.device
    kv_bytes = batch * context * NUM_KV_HEADS * HEAD_DIM * 2 * cache.k.element_size()
    num_splits = choose_num_splits(batch, NUM_KV_HEADS, context, device)
    result = Result(str(dtype).removeprefix("torch."), batch, context, kv_bytes, num_splits)
    block_tables = cache.block_tables(batch, context)
    seq_lens = torch.full((batch,), context, dtype=torch.int32, device=device)
    q = torch.randn(batch, NUM_HEADS, HEAD_DIM, dtype=dtype, device=device)
    scale = HEAD_DIM**-0.5

    paged_args = (q, cache.k, cache.v, block_tables, seq_lens, scale)
    impls = {"triton": functools.partial(paged_decode_attention, *paged_args)}
    try:
        k, v = cache.contiguous(cache.k, block_tables), cache.contiguous(cache.v, block_tables)
        q_sdpa = q.view(batch, NUM_KV_HEADS, NUM_HEADS // NUM_KV_HEADS, HEAD_DIM)  # group heads as query rows
        impls["sdpa"] = functools.partial(torch.nn.functional.scaled_dot_product_attention, q_sdpa, k, v,
                                          scale=scale)
    except torch.OutOfMemoryError as e:
        result.errors["sdpa"] = f"out of memory laying K/V out contiguously: {e}".splitlines()[0]
    if batch * context <= MAX_REF_TOKENS:
        impls["ref"] = functools.partial(paged_decode_attention_ref, *paged_args)

    outputs = {}
    for name, fn in impls.items():
        try:
            outputs[name] = fn().reshape(batch, NUM_HEADS, HEAD_DIM).float()
            p20, p50, p80 = triton.testing.do_bench(fn, warmup=plan.warmup_ms, rep=plan.rep_ms,
                                                    quantiles=[0.2, 0.5, 0.8])  # ms
        except Exception as e:  # one failing implementation must not end the run
            result.errors[name] = f"{type(e).__name__}: {e}".splitlines()[0][:200]
            torch.cuda.empty_cache()
            continue
        result.ms[name], result.ms_p20[name], result.ms_p80[name] = p50, p20, p80
        result.gbs[name] = kv_bytes / (p50 * 1e-3) / 1e9
        if peak:
            result.pct_peak[name] = 100.0 * result.gbs[name] / peak
    if "triton" in outputs and "sdpa" in outputs:
        result.max_abs_err = (outputs["triton"] - outputs["sdpa"]).abs().max().item()
    return result


def table(results: list[Result]) -> str:
    header = ["dtype", "batch", "context", "KV MB", "splits",
              "triton ms", "GB/s", "%peak", "sdpa ms", "GB/s", "%peak", "ref ms", "sdpa/triton", "err"]
    rows = []
    for r in results:
        def cell(d: dict, name: str, fmt: str, r: Result = r) -> str:
            return format(d[name], fmt) if name in d else ("err" if name in r.errors else "-")

        speedup = r.ms["sdpa"] / r.ms["triton"] if "sdpa" in r.ms and "triton" in r.ms else None
        rows.append([
            r.dtype, str(r.batch), str(r.context), f"{r.kv_bytes / 1e6:.1f}", str(r.num_splits),
            cell(r.ms, "triton", ".4f"), cell(r.gbs, "triton", ".0f"), cell(r.pct_peak, "triton", ".1f"),
            cell(r.ms, "sdpa", ".4f"), cell(r.gbs, "sdpa", ".0f"), cell(r.pct_peak, "sdpa", ".1f"),
            cell(r.ms, "ref", ".3f"), "-" if speedup is None else f"{speedup:.2f}x",
            "-" if r.max_abs_err is None else f"{r.max_abs_err:.1e}",
        ])
    return format_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__.splitlines()[0], sizes=tuple(PLANS), threads=False)
    parser.add_argument("--peak-gbs", type=float, metavar="GBS",
                        help="peak memory bandwidth in GB/s (default: by device name)")
    args = parser.parse_args(argv)

    if not torch.cuda.is_available():
        print("benchmarks.kernels: no CUDA device here; the Triton kernels are benchmarked on a GPU only. "
              "Nothing to do.")
        return 0

    if os.environ.pop("TRITON_INTERPRET", None) == "1":
        print("benchmarks.kernels: ignoring TRITON_INTERPRET=1, the kernels are compiled for the GPU")
    started = time.perf_counter()
    plan = PLANS[args.size]
    device = torch.device("cuda")
    device_name = torch.cuda.get_device_name(device)
    peak = args.peak_gbs or peak_gbs_for(device_name)
    print(f"device: {device_name}; peak bandwidth: "
          f"{f'{peak:.0f} GB/s' if peak else 'unknown (pass --peak-gbs)'}")
    print(f"layer: {NUM_HEADS} query heads, {NUM_KV_HEADS} KV heads, head_dim {HEAD_DIM}, block size "
          f"{BLOCK_SIZE}")

    configs = [(b, c) for b in plan.batches for c in plan.contexts if b * c <= MAX_TOKENS]
    max_tokens = max(b * c for b, c in configs)
    results, skipped = [], []
    torch.manual_seed(0)
    for dtype in plan.dtypes:
        cache = PagedCache(dtype, max_tokens, device)
        for batch, context in configs:
            if time.perf_counter() - started > plan.budget_s:
                skipped.append((str(dtype).removeprefix("torch."), batch, context))
                continue
            results.append(run_config(cache, dtype, batch, context, plan, peak))
            print(f"  {results[-1].dtype} batch {batch:>3} context {context:>5}: "
                  f"triton {results[-1].ms.get('triton', float('nan')):.4f} ms", flush=True)
        del cache
        torch.cuda.empty_cache()

    print("\n" + table(results))
    for r in results:
        for name, message in r.errors.items():
            print(f"error: {r.dtype} batch {r.batch} context {r.context} {name}: {message}")
    if skipped:
        print(f"skipped (past the {plan.budget_s:.0f} s budget): {skipped}")
    elapsed = time.perf_counter() - started
    print(f"total {elapsed:.1f} s")

    if args.json:
        import triton

        common.write_json(args.json, {
            "device": device_name, "peak_gbs": peak, "torch": torch.__version__, "triton": triton.__version__,
            "layer": {"num_heads": NUM_HEADS, "num_kv_heads": NUM_KV_HEADS, "head_dim": HEAD_DIM,
                      "block_size": BLOCK_SIZE},
            "plan": {"dtypes": [str(d).removeprefix("torch.") for d in plan.dtypes], "batches": plan.batches,
                     "contexts": plan.contexts, "warmup_ms": plan.warmup_ms, "rep_ms": plan.rep_ms},
            "results": [asdict(r) for r in results], "skipped": skipped, "elapsed_s": elapsed})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
