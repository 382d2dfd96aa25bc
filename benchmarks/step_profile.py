"""Where an engine step's time goes, per phase, for the engine here and for an earlier commit's.

    python -m benchmarks.step_profile [--baseline REV] [--batches 1,16,64] [--rounds 2] [--no-shared]
                                      [--json PATH]

The workload of benchmarks/vs_vllm.py's throughput: a batch of prompts (node 03's system prompt
and a question, ~120 tokens each), 64 greedy tokens each, from an empty cache, prefix sharing
off, the trained weights, the engine's default backend ('auto'), one torch thread. For each engine (REV's,
extracted with `git archive`, and the working tree's) and each batch size, in child processes taking turns
(`rounds` times each; the best is kept, the machine being shared):

- generated tokens/s: the best of 3 timed `generate` calls after a warm-up, no profiler; and per
  second of the process's CPU time (the same calls' best), which moves less when the machine is shared;
- per step: one more run under cProfile, each phase's cumulative time divided by the steps.
  The phases are the engine's own functions: schedule (`Engine._schedule`: admission, blocks,
  the prefix cache), prepare (`Engine._prepare`: the batch's tensors), model
  (`Transformer.forward`), post-process (`Engine._postprocess`: sampling, finishing). An engine
  from before the phases were named (commit 4746df0 and earlier) shows schedule as the
  scheduler's calls plus the slot bookkeeping, and prepare and post-process together as the
  rest of its `_prefill` and `_decode`.

And the shared-prefix trace (unless --no-shared): benchmarks/prefix.py's full workload (32 requests
at once, each a 512-token shared prefix and its own 16-32-token question, 8 greedy tokens, random
weights, blocks of 16), prefix sharing on: its first step (every prefill, 93% of the prompt tokens
found in the radix cache) and its 7 decode steps, profiled apart; of the model's time, the attention
backend's calls ("attention": the extend attention over the cached prefix in the first step, the
decode attention in the others; 0 where the forward ran in one C call, engine/native_forward.py).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_TOKENS = 64
SYSTEM_PROMPT_QUESTIONS = 10  # node 03's questions, repeated to make the batch

# (file, function) whose cumulative time is each phase's; "rest" = the step's time not in them.
PHASES = {
    "schedule": [("engine.py", "_schedule"), ("scheduler.py", "admit_next"),
                 ("scheduler.py", "schedule_decode"), ("engine.py", "_kv_cache_slots"),
                 ("scheduler.py", "after_prefill"), ("scheduler.py", "finish_if_done")],
    "prepare": [("engine.py", "_prepare")],
    "model": [("engine.py", "_run_model")],  # (the torch forward or the C; an older engine: below)
    "post-process": [("engine.py", "_postprocess")],
}
NEW_STYLE = ("engine.py", "_schedule")  # present: the schedule entries below it are inside it
# Inside the model: the attention backend's calls, each by whichever of its functions holds the most
# time (the C's wrapper includes the reference it hands a batch to; an older engine has only the reference;
# the native forward's decode_layer has RoPE and the KV stores in it). The shared-prefix trace shows it apart.
ATTENTION = {
    "extend": [("cpu_extend.py", "paged_extend_attention"), ("reference.py", "paged_extend_attention_ref"),
               ("extend_attention.py", "paged_extend_attention")],
    "decode": [("cpu_native.py", "paged_decode_attention"), ("reference.py", "paged_decode_attention_ref"),
               ("decode_attention.py", "paged_decode_attention"), ("cpu_layer.py", "decode_layer")],
}


def prompts(n: int) -> list[str]:
    from kvviz.nodes.prompts import MORE_QUESTIONS, QUESTIONS
    from kvviz.nodes.vllm.scenario import prompt_for

    base = [prompt_for(q) for q in (*QUESTIONS, *MORE_QUESTIONS)]
    return [f"[{i}] {base[i % len(base)]}" for i in range(n)]


# -- the child: one engine tree, every batch size --------------------------------------------
def child(tree: str, spec_path: str) -> None:
    sys.path.insert(0, tree)
    import torch

    from engine import Engine, EngineConfig

    torch.set_num_threads(1)
    spec = json.loads(Path(spec_path).read_text())

    def run(batch: list[str], profiler: cProfile.Profile | None = None):
        blocks = len(batch) * 8 + 8  # room for every request at once: no preemption
        engine = Engine(EngineConfig(num_blocks=blocks, block_size=32, device="cpu"))  # backend auto
        t0, c0 = time.perf_counter(), time.process_time()
        with profiler or contextlib.nullcontext():  # (a Profile profiles inside a `with`)
            results = engine.generate(batch, MAX_TOKENS)
        used.add(engine.backend.name)
        return time.perf_counter() - t0, engine.scheduler.counters.steps, results, time.process_time() - c0

    out: dict = {}
    used: set[str] = set()
    if spec.get("shared"):
        out["shared"] = shared_child(spec["shared"], Engine, EngineConfig)
    for name, batch in spec["batches"].items():
        run(batch)  # warm-up
        timed = [run(batch) for _ in range(3)]
        prof = cProfile.Profile()
        _, steps, results, _ = run(batch, prof)
        out[name] = {"backend": "/".join(sorted(used)), "wall_s": min(t[0] for t in timed),
                     "cpu_s": min(t[3] for t in timed), "steps": steps, "tokens": len(batch) * MAX_TOKENS,
                     "phases_ms": phase_times(pstats.Stats(prof), steps),
                     "token_ids": [r.token_ids for r in results]}
    print("KVVIZ-RESULT " + json.dumps(out), flush=True)


def shared_child(shared: dict, engine_cls, config_cls) -> dict:
    """The shared-prefix trace: the best of 3 timed runs, then one run with its first step and its
    other steps profiled apart."""
    engine = engine_cls(config_cls(num_blocks=shared["num_blocks"], block_size=shared["block_size"],
                                   device="cpu", weights="random", prefix_sharing=True))  # backend auto

    def serve(first: cProfile.Profile | None = None,
              rest: cProfile.Profile | None = None) -> tuple[float, float, list]:
        engine.reset()
        t0, c0 = time.perf_counter(), time.process_time()
        ids = [engine.add_request(p, shared["max_tokens"]) for p in shared["prompts"]]
        steps = 0
        while engine.has_unfinished():
            prof = first if steps == 0 else rest
            with prof or contextlib.nullcontext():
                engine.step()
            steps += 1
            for rid in ids:
                if engine.requests[rid].status.value == "finished":
                    engine.release(rid)
        return (time.perf_counter() - t0, time.process_time() - c0,
                [list(engine.requests[i].output_ids) for i in ids])

    serve()  # warm-up
    timed = [serve() for _ in range(3)]
    first, rest = cProfile.Profile(), cProfile.Profile()
    _, _, token_ids = serve(first, rest)
    steps = engine.scheduler.counters.steps
    return {"backend": engine.backend.name, "wall_s": min(t[0] for t in timed),
            "cpu_s": min(t[1] for t in timed), "steps": steps,
            "tokens": len(shared["prompts"]) * shared["max_tokens"],
            "prefill_ms": phase_times(pstats.Stats(first), 1),
            "decode_ms": phase_times(pstats.Stats(rest), steps - 1), "token_ids": token_ids}


def shared_spec() -> dict:
    """benchmarks/prefix.py's full workload, for the children."""
    from benchmarks import prefix

    size = prefix.SIZES["full"]
    return {"prompts": [p.decode() for p in prefix.make_prompts(size)], "max_tokens": prefix.NEW_TOKENS,
            "block_size": prefix.BLOCK_SIZE, "num_blocks": prefix.pool_blocks(size)}


def phase_times(stats: pstats.Stats, steps: int) -> dict[str, float]:
    """Milliseconds per step in each phase, and in the whole step."""
    cum: dict[tuple[str, str], float] = {}
    for (file, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        key = (Path(file).name, func)
        cum[key] = max(cum.get(key, 0.0), ct) if key == ("model.py", "forward") else cum.get(key, 0.0) + ct
    new_style = NEW_STYLE in cum
    out = {}
    for phase, funcs in PHASES.items():
        if phase == "schedule" and new_style:
            funcs = [NEW_STYLE]
        if phase == "model" and ("engine.py", "_run_model") not in cum:  # (the largest model.py `forward`)
            funcs = [("model.py", "forward")]
        out[phase] = sum(cum.get(f, 0.0) for f in funcs)
    out["attention"] = sum(max(cum.get(f, 0.0) for f in funcs) for funcs in ATTENTION.values())
    step = cum.get(("engine.py", "step"), 0.0)
    if not new_style:  # before the phases were named: prepare and post-process are the rest
        out["prepare"] = step - out["schedule"] - out["model"]
    out["step"] = step
    return {k: 1000 * v / steps for k, v in out.items()}


# -- the parent ------------------------------------------------------------------------------
def tree_at(rev: str, into: Path) -> Path:
    """The engine (engine/, kernels/, assets/) as it was at `rev`."""
    archive = subprocess.run(["git", "archive", rev, "engine", "kernels", "assets"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def measure(tree: Path, spec: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.step_profile", "--child", str(tree), str(spec)],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("KVVIZ-RESULT "))
    return json.loads(line.removeprefix("KVVIZ-RESULT "))


def report(out: dict) -> str:
    lines = [f"# Engine step profile: {out['baseline']} (before) vs the working tree (after)",
             f"({MAX_TOKENS} greedy tokens per request from an empty cache, trained weights, torch backend, "
             f"1 torch thread; tokens/s the best of 3 × {out['rounds']} rounds; ms per step from cProfile, "
             "so a little above the unprofiled time)", "",
             "| batch | engine | tokens/s | tokens per CPU-s | steps | step ms | schedule | prepare | model "
             "| post-process |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in out["batches"]:
        for who in ("before", "after"):
            lines[1] = lines[1].replace("torch backend", "the engine's default backend (before: "
                                        f"{out['before'][name]['backend']}, after: "
                                        f"{out['after'][name]['backend']})")
            r = out[who][name]
            p = r["phases_ms"]
            post = ("(in prepare)" if who == "before" and p["post-process"] == 0
                    else f"{p['post-process']:.2f}")
            cpu = f"{r['tokens'] / r['cpu_s']:.0f}" if "cpu_s" in r else "-"
            lines.append(f"| {name} | {who} | {r['tokens'] / r['wall_s']:.0f} | {cpu} | {r['steps']} | "
                         f"{p['step']:.2f} | {p['schedule']:.2f} | {p['prepare']:.2f} | {p['model']:.2f} | "
                         f"{post} |")
    same = all(out["before"][n]["token_ids"] == out["after"][n]["token_ids"] for n in out["batches"])
    if "shared" in out["after"]:
        lines += shared_report(out)
        same = same and out["before"]["shared"]["token_ids"] == out["after"]["shared"]["token_ids"]
    lines += ["", f"tokens identical before and after: {'yes' if same else 'NO'}"]
    return "\n".join(lines)


def shared_report(out: dict) -> list[str]:
    lines = ["",
             "Shared prefix (benchmarks.prefix's full workload, sharing on: 32 requests on a 512-token "
             f"prefix, 8 tokens each; before: {out['before']['shared']['backend']}, after: "
             f"{out['after']['shared']['backend']}; the run's wall time the best of 3 × rounds; ms per step "
             "from cProfile):", "",
             "| engine | run wall ms | run CPU ms | steps | step | ms | schedule | prepare | model | "
             "(attention) | post-process |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for who in ("before", "after"):
        r = out[who]["shared"]
        for label, key in (("prefill (1)", "prefill_ms"), (f"decode ({r['steps'] - 1})", "decode_ms")):
            p = r[key]
            lines.append(f"| {who} | {1000 * r['wall_s']:.1f} | {1000 * r['cpu_s']:.1f} | {r['steps']} | "
                         f"{label} | {p['step']:.2f} | {p['schedule']:.2f} | {p['prepare']:.2f} | "
                         f"{p['model']:.2f} | {p.get('attention', 0.0):.2f} | {p['post-process']:.2f} |")
    return lines


def best(a: dict | None, b: dict) -> dict:
    if a is None:
        return b
    return {n: (a[n] if a[n]["wall_s"] <= b[n]["wall_s"] else b[n]) for n in b}  # (batches, and "shared")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description="Where an engine step's time goes, before and after.")
    parser.add_argument("--baseline", default="4746df0", help="the commit to compare with (default: 4746df0, "
                        "before issue 21's changes)")
    parser.add_argument("--batches", default="1,16,64", help="batch sizes (default: 1,16,64)")
    parser.add_argument("--rounds", type=int, default=2, help="turns each engine takes (default: 2)")
    parser.add_argument("--no-shared", action="store_true", help="leave out the shared-prefix trace")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument("--child", nargs=2, metavar=("TREE", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return {}
    sizes = [int(b) for b in args.batches.split(",")]
    with tempfile.TemporaryDirectory(prefix="kvviz-steps-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"batches": {str(n): prompts(n) for n in sizes},
                                    "shared": None if args.no_shared else shared_spec()}))
        before_tree = tree_at(args.baseline, Path(tmp))
        before = after = None
        for _ in range(args.rounds):
            before = best(before, measure(before_tree, spec))
            after = best(after, measure(ROOT, spec))
    out = {"baseline": args.baseline, "rounds": args.rounds, "batches": [str(n) for n in sizes],
           "before": before, "after": after}
    print(report(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
