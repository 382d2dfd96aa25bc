"""kvviz's engine against a real vLLM, same trained weights, greedy, blocks of 32 tokens.

    python -m benchmarks.vs_vllm [--quick] [--json PATH]     # needs `make vllm-venv`

It starts vLLM's CPU build on a free port (kvviz/nodes/vllm/server.py: 64-block pool, prefix
caching, KV events) and subscribes to its KV events before sending anything, then:

1. tokens: the same prompts through both engines, `max_tokens` greedy tokens each: identical
   token ids, or the first divergence and our model's logit margin (top-1 minus top-2) there;
2. a shared-prefix trace: node 03's system prompt (3 blocks) with ten questions, sent one after
   another: per request, the prompt tokens each engine found in its prefix cache (vLLM's
   `usage.prompt_tokens_details.cached_tokens`, our `num_prefix_hit`) must be equal, and the
   hashes of our cached blocks (vLLM's hash function, recomputed in Python) must equal the set
   of hashes in vLLM's `BlockStored` events;
3. throughput on this CPU: the same batch of requests (the trace's prompts, sent at once) served
   by each engine from an empty cache; generated tokens per second of wall time, median of
   `repeats`. vLLM's time includes HTTP and its server's scheduling; ours is the engine alone,
   one torch thread. vLLM pins its compute to one core.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import platform
import statistics
import subprocess
import time
from datetime import date
from pathlib import Path

import torch
import zmq

from engine import Engine, EngineConfig
from kvviz.nodes.radix.scenario import MORE_QUESTIONS, QUESTIONS
from kvviz.nodes.vllm import client, server
from kvviz.nodes.vllm.scenario import Mirror, prompt_for
from kvviz.nodes.vllm.server import BLOCK_SIZE, MODEL_NAME, NUM_BLOCKS, VllmServer
from kvviz.nodes.vllm.wire import BlockStored, decode_frames

PROMPTS = ["The KV cache", "Free memory is broken into", "A good system spends its memory on", "The model",
           "A page table maps", "def add(a, b):\n    return", "Memory is", *(prompt_for(q) for q in QUESTIONS)]
SIZES = {"full": {"max_tokens": 256, "repeats": 3, "batch": 16}, "quick": {"max_tokens": 64, "repeats": 1, "batch": 8}}


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
            row.update(first_divergence=first, our_margin=margin_at(engine, list(prompt.encode()) + ours, len(prompt.encode()) + first))
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


def throughput(url: str, prompts: list[str], max_tokens: int, repeats: int) -> dict:
    """Generated tokens per second, each engine serving `prompts` at once from an empty cache."""
    vllm_s, our_s = [], []
    for r in range(repeats):
        # a fresh prefix each repeat, so that vLLM's cache (which outlives a run) holds none of it
        batch = [f"[run {r} {time.time_ns()}] {p}" for p in prompts]
        with concurrent.futures.ThreadPoolExecutor(len(batch)) as pool:
            t0 = time.perf_counter()
            outs = list(pool.map(lambda p: client.complete(url, MODEL_NAME, p, max_tokens), batch))
            vllm_s.append(time.perf_counter() - t0)
        assert all(len(o.token_ids) == max_tokens for o in outs)
        engine = Engine(EngineConfig(num_blocks=NUM_BLOCKS * 4, block_size=BLOCK_SIZE, prefix_sharing=True))
        t0 = time.perf_counter()
        engine.generate(batch, max_tokens)
        our_s.append(time.perf_counter() - t0)
    n = len(prompts) * max_tokens
    return {"requests": len(prompts), "tokens": n, "vllm_s": statistics.median(vllm_s),
            "ours_s": statistics.median(our_s), "vllm_tok_s": n / statistics.median(vllm_s),
            "ours_tok_s": n / statistics.median(our_s)}


def report(out: dict) -> str:
    t, p, s = out["tokens"], out["trace"], out["throughput"]
    same = sum(r["identical"] for r in t)
    lines = [f"# kvviz's engine vs vLLM {out['vllm_version']} — {out['date']}, {out['machine']}",
             f"(same weights, greedy, blocks of {BLOCK_SIZE}, vLLM pool {NUM_BLOCKS} blocks; vLLM ready in "
             f"{out['vllm_start_s']:.0f} s)", "", f"1. tokens: {same} of {len(t)} prompts identical over "
             f"{t[0]['tokens']} generated tokens each"]
    lines += [f"   differs: {r['prompt']!r} at token {r['first_divergence']}, our logit margin there "
              f"{r['our_margin']:.4f}" for r in t if not r["identical"]]
    lines += ["", "2. shared-prefix trace (system prompt + one question each, sent one after another):",
              "   | question | cached prompt tokens, vLLM | ours | tokens identical |", "   | --- | --- | --- | --- |"]
    lines += [f"   | {r['question']} | {r['vllm_cached']} | {r['our_cached']} | {'yes' if r['identical'] else 'NO'} |"
              for r in p["requests"]]
    lines += [f"   cached tokens equal for every request: {'yes' if p['cached_equal'] else 'NO'}; our "
              f"{p['our_blocks']} cached blocks' hashes == the {p['vllm_stored']} hashes vLLM's BlockStored "
              f"events announced: {'yes' if p['hashes_equal'] else 'NO'}",
              "", f"3. throughput, {s['requests']} requests at once × {s['tokens'] // s['requests']} tokens, "
              "from an empty cache (median):",
              "   | engine | wall (s) | generated tokens/s |", "   | --- | --- | --- |",
              f"   | vLLM (server, HTTP, eager) | {s['vllm_s']:.2f} | {s['vllm_tok_s']:.0f} |",
              f"   | kvviz (engine, torch, 1 thread) | {s['ours_s']:.2f} | {s['ours_tok_s']:.0f} |"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description="kvviz's engine against a real vLLM (same weights).")
    parser.add_argument("--quick", action="store_const", const="quick", dest="size", default="full")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    torch.set_num_threads(1)
    version = subprocess.run([str(server.PYTHON), "-c", "import vllm; print(vllm.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    with VllmServer() as srv:
        sub = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(srv.events)
        time.sleep(1.0)  # subscribed before the first request
        out = {"vllm_version": version, "date": date.today().isoformat(), "size": args.size,
               "machine": f"{platform.machine()}, {torch.get_num_threads()} torch thread, {platform.python_version()}",
               "vllm_start_s": srv.started_s}
        out["trace"] = shared_prefix_trace(srv, sub, 64)
        out["tokens"] = compare_tokens(srv.url, size["max_tokens"])
        prompts = [prompt_for(q) for q in (*QUESTIONS, *MORE_QUESTIONS)] * 4
        out["throughput"] = throughput(srv.url, prompts[: size["batch"]], 64, size["repeats"])
        sub.close()
    print(report(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
