"""kvviz's engine against a real vLLM, same trained weights, greedy, blocks of 32 tokens.

    python -m benchmarks.vs_vllm [--quick] [--json PATH] [--baseline REV] [--rounds N]
    # needs `make vllm-venv`

vLLM's CPU build on a free port (tools/vllm_server.py, vllm_watch/defaults.py's settings), its KV
events subscribed to before anything is sent; then (docs/benchmarks.md, "kvviz's engine against
vLLM"): 1. tokens: the same prompts through both engines, greedy: identical token ids, or the
first divergence and our logit margin (top-1 minus top-2) there; 2. a shared-prefix trace, node
03's system prompt and ten questions one after another: the prompt tokens each engine found cached
must be equal, and our cached blocks' hashes (vLLM's hash, recomputed) equal vLLM's `BlockStored`
events'; 3. throughput, batches of 1, 16 and 64 prompts × 64 greedy tokens from an empty cache:
vLLM's HTTP server (a second one, pool big enough, each repeat's prompts a fresh prefix; median),
vLLM's offline `LLM` (benchmarks/vllm_offline.py, in vLLM's environment; best of 3 after a warm-up;
its tokens must equal ours) and our engine alone (benchmarks/step_profile.py's child, one torch
thread, sharing off; best of 3), with `--baseline REV` REV's engine too; `--rounds N`: the offline
`LLM` and ours take N turns (ours and REV's swapping places), each keeping its best.
"""

from __future__ import annotations

import concurrent.futures
import json
import platform
import statistics
import subprocess
import tempfile
import time
from datetime import date
from pathlib import Path

import torch
import zmq

from benchmarks import common, step_profile
from engine import Engine, EngineConfig
from kvviz.nodes.prompts import MORE_QUESTIONS, QUESTIONS
from kvviz.nodes.vllm.scenario import Mirror, prompt_for
from tools import vllm_server as server
from tools.vllm_server import VllmServer
from vllm_watch import client
from vllm_watch.defaults import BLOCK_SIZE, MODEL_NAME, NUM_BLOCKS
from vllm_watch.wire import BlockStored, decode_frames

PROMPTS = ["The KV cache", "Free memory is broken into", "A good system spends its memory on", "The model",
           "A page table maps", "def add(a, b):\n    return", "Memory is",
           *(prompt_for(q) for q in QUESTIONS)]
SIZES = {"full": {"max_tokens": 256, "repeats": 3, "batches": (1, 16, 64)},
         "quick": {"max_tokens": 64, "repeats": 1, "batches": (1, 8)}}
THROUGHPUT_TOKENS = 64
THROUGHPUT_BLOCKS = 8 * 64 + 8  # vLLM's pool for the throughput server: 64 requests at once


def margin_at(engine: Engine, tokens: list[int], position: int) -> float:
    """Our model's top-1 minus top-2 logit for the token at `position` of `tokens`."""
    logits = engine.model.forward_full(tokens[:position])[-1]
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1])


def compare_tokens(url: str, max_tokens: int) -> list[dict]:
    engine = Engine(EngineConfig(num_blocks=NUM_BLOCKS, block_size=BLOCK_SIZE))
    rows = []
    for prompt in PROMPTS:
        theirs = list(client.complete(url, MODEL_NAME, prompt, max_tokens).token_ids)
        ours = engine.generate([prompt], max_tokens)[0].token_ids
        first = next((i for i, (a, b) in enumerate(zip(theirs, ours, strict=True)) if a != b), None)
        row = {"prompt": prompt[-40:], "tokens": len(ours), "identical": first is None}
        if first is not None:
            row.update(first_divergence=first,
                       our_margin=margin_at(engine, list(prompt.encode()) + ours,
                                            len(prompt.encode()) + first))
        rows.append(row)
    return rows


def shared_prefix_trace(srv: VllmServer, sub: zmq.Socket, max_tokens: int) -> dict:
    mirror, rows = Mirror(), []
    for q in (*QUESTIONS, *MORE_QUESTIONS):
        c = client.complete(srv.url, MODEL_NAME, prompt_for(q), max_tokens)
        [(ours, our_cached)] = mirror.serve([prompt_for(q)], max_tokens)
        rows.append({"question": q, "vllm_cached": c.cached_tokens, "our_cached": our_cached,
                     "identical": list(c.token_ids) == ours})
    time.sleep(1.0)  # (events are published when vLLM's engine steps; let the last ones arrive)
    stored: set[int] = set()
    while sub.poll(500):
        for event in decode_frames(sub.recv_multipart()).events:
            if isinstance(event, BlockStored):
                stored.update(event.block_hashes)
    ours = set(mirror.block_hashes().values())
    return {"requests": rows, "cached_equal": all(r["vllm_cached"] == r["our_cached"] for r in rows),
            "our_blocks": len(ours), "vllm_stored": len(stored), "hashes_equal": ours == stored}


def http_throughput(url: str, prompts: list[str], max_tokens: int, repeats: int) -> dict:
    """Generated tokens per second, vLLM's server serving `prompts` at once from an empty cache."""
    vllm_s = []
    for r in range(repeats):
        # a fresh prefix each repeat, so that vLLM's cache (which outlives a run) holds none of it
        batch = [f"[run {r} {time.time_ns()}] {p}" for p in prompts]
        with concurrent.futures.ThreadPoolExecutor(len(batch)) as pool:
            t0 = time.perf_counter()
            outs = list(pool.map(lambda p: client.complete(url, MODEL_NAME, p, max_tokens), batch))
            vllm_s.append(time.perf_counter() - t0)
        assert all(len(o.token_ids) == max_tokens for o in outs)
    n = len(prompts) * max_tokens
    return {"requests": len(prompts), "tokens": n, "vllm_s": statistics.median(vllm_s),
            "vllm_tok_s": n / statistics.median(vllm_s)}


def offline_throughput(model_dir: Path, batches: dict[str, list[str]], repeats: int) -> dict:
    """vLLM's offline LLM (a subprocess in vLLM's environment) on `batches`: seconds and tokens."""
    with tempfile.TemporaryDirectory(prefix="kvviz-offline-") as tmp:
        spec = Path(tmp) / "batches.json"
        spec.write_text(json.dumps({"max_tokens": THROUGHPUT_TOKENS, "repeats": repeats, "batches": batches}))
        # (-P: benchmarks/ is not put on its path: transformers imports a package named `kernels`
        # when one is found, and benchmarks/kernels.py would be taken for it)
        proc = subprocess.run([str(server.PYTHON), "-P", str(Path(__file__).with_name("vllm_offline.py")),
                               str(model_dir), str(spec)], cwd=tmp, env=server.environment(),
                              capture_output=True, text=True)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("KVVIZ-RESULT ")), None)
    if line is None:
        raise RuntimeError(f"vLLM's offline run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(line.removeprefix("KVVIZ-RESULT "))


def merge_offline(a: dict | None, b: dict) -> dict:
    """Two offline runs as one: every timed repeat of each batch (the report keeps the best)."""
    if a is None:
        return b
    return {**b, "batches": {n: {**r, "seconds": a["batches"][n]["seconds"] + r["seconds"]}
                             for n, r in b["batches"].items()}}


def ours_throughput(batches: dict[str, list[str]], baseline: str | None,
                    baseline_first: bool = False) -> dict:
    """Our engine (and `baseline`'s, when given) on `batches`: step_profile's child, in turn
    (`baseline_first`: the baseline's turn first; the first turn follows vLLM's run, whose processes
    may still be winding down, so the rounds alternate it)."""
    with tempfile.TemporaryDirectory(prefix="kvviz-ours-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"batches": batches}))
        trees = {"after": step_profile.ROOT}
        if baseline:
            trees["before"] = step_profile.tree_at(baseline, Path(tmp))
        order = ["before", "after"] if baseline_first else ["after", "before"]
        out = {who: step_profile.measure(trees[who], spec) for who in order if who in trees}
    return out


def report(out: dict) -> str:
    t, p = out["tokens"], out["trace"]
    same = sum(r["identical"] for r in t)
    lines = [f"# kvviz's engine vs vLLM {out['vllm_version']} — {out['date']}, {out['machine']}",
             f"(same weights, greedy, blocks of {BLOCK_SIZE}, vLLM pool {NUM_BLOCKS} blocks; vLLM ready in "
             f"{out['vllm_start_s']:.0f} s)", "", f"1. tokens: {same} of {len(t)} prompts identical over "
             f"{t[0]['tokens']} generated tokens each"]
    lines += [f"   differs: {r['prompt']!r} at token {r['first_divergence']}, our logit margin there "
              f"{r['our_margin']:.4f}" for r in t if not r["identical"]]
    lines += ["", "2. shared-prefix trace (system prompt + one question each, sent one after another):",
              "   | question | cached prompt tokens, vLLM | ours | tokens identical |",
              "   | --- | --- | --- | --- |"]
    lines += [f"   | {r['question']} | {r['vllm_cached']} | {r['our_cached']} | "
              f"{'yes' if r['identical'] else 'NO'} |"
              for r in p["requests"]]
    lines += [f"   cached tokens equal for every request: {'yes' if p['cached_equal'] else 'NO'}; our "
              f"{p['our_blocks']} cached blocks' hashes == the {p['vllm_stored']} hashes vLLM's BlockStored "
              f"events announced: {'yes' if p['hashes_equal'] else 'NO'}",
              "",
              f"3. throughput: batches of requests × {THROUGHPUT_TOKENS} greedy tokens from an empty cache, "
              "generated tokens/s (kvviz: the engine alone, 1 torch thread, prefix sharing off, best of 3 "
              "after a warm-up):"]
    turns = f", best of {out['rounds']} turns" if out.get("rounds", 1) > 1 else ""
    head = (f"   | batch | vLLM HTTP server (eager, median of {out['repeats']}) | vLLM offline LLM "
            f"(compiled, best of 3 after a warm-up{turns}) |")
    rule = "   | --- | --- | --- |"
    if "before" in out["ours"]:
        head += f" kvviz before ({out['baseline']}) |"
        rule += " --- |"
    head += " kvviz | kvviz ÷ HTTP | kvviz ÷ offline | tokens = offline's |"
    rule += " --- | --- | --- | --- |"
    lines += [head, rule]
    for name in out["batches"]:
        http, off = out["http"][name], out["offline"]["batches"][name]
        n = http["tokens"]
        off_tok_s = n / min(off["seconds"])
        ours = out["ours"]["after"][name]
        ours_tok_s = n / ours["wall_s"]
        row = f"   | {name} | {http['vllm_tok_s']:.0f} | {off_tok_s:.0f} |"
        if "before" in out["ours"]:
            row += f" {n / out['ours']['before'][name]['wall_s']:.0f} |"
        same = ours["token_ids"] == off["token_ids"]
        row += (f" {ours_tok_s:.0f} | {ours_tok_s / http['vllm_tok_s']:.2f}× | "
                f"{ours_tok_s / off_tok_s:.2f}× | {'yes' if same else 'NO'} |")
        lines.append(row)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = common.parser("kvviz's engine against a real vLLM (same weights).", sizes=tuple(SIZES),
                           threads=False)
    parser.add_argument("--baseline", metavar="REV",
                        help="also time the engine of commit REV, in the same run")
    parser.add_argument("--rounds", type=int, default=1,
                        help="turns vLLM's offline LLM and our engine take, one "
                        "after the other; each one's best is kept (default: 1)")
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    torch.set_num_threads(1)
    version = server.version()
    with VllmServer() as srv:
        sub = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(srv.events)
        time.sleep(1.0)  # subscribed before the first request
        out = {"vllm_version": version, "date": date.today().isoformat(), "size": args.size,
               "machine": f"{platform.machine()}, {torch.get_num_threads()} torch thread, "
                          f"{platform.python_version()}",
               "vllm_start_s": srv.started_s}
        out["trace"] = shared_prefix_trace(srv, sub, 64)
        out["tokens"] = compare_tokens(srv.url, size["max_tokens"])
        sub.close()
    batches = {str(n): step_profile.prompts(n) for n in size["batches"]}
    out["batches"] = list(batches)
    with VllmServer(num_blocks=THROUGHPUT_BLOCKS) as srv:
        out["vllm_throughput_start_s"] = srv.started_s
        out["http"] = {name: http_throughput(srv.url, prompts, THROUGHPUT_TOKENS, size["repeats"])
                       for name, prompts in batches.items()}
    out["offline"] = out["ours"] = None
    # after the server stopped: the CPU to itself
    with tempfile.TemporaryDirectory(prefix="kvviz-model-") as tmp:
        model_dir = server.export_model(Path(tmp) / "model")
        for turn in range(args.rounds):  # taking turns, so that both see the shared machine's quiet moments
            out["offline"] = merge_offline(out["offline"], offline_throughput(model_dir, batches, 3))
            ours = ours_throughput(batches, args.baseline, baseline_first=turn % 2 == 1)
            out["ours"] = {who: step_profile.best((out["ours"] or {}).get(who), r) for who, r in ours.items()}
    out["baseline"], out["repeats"], out["rounds"] = args.baseline, size["repeats"], args.rounds
    print(report(out))
    if args.json:
        common.write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
