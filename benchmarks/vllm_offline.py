"""vLLM's offline `LLM`, in process, generating for batches of prompts: run with vLLM's Python.

    .venv-vllm/bin/python benchmarks/vllm_offline.py MODEL_DIR BATCHES.json   # prints JSON

benchmarks/vs_vllm.py's subprocess (vLLM has its own environment: standard library and vllm only).
BATCHES.json: {"max_tokens": 64, "repeats": 3, "batches": {"16": [prompt, ...], ...}}; each batch a
warm-up generate, then `repeats` timed: each one's wall time and the last one's token ids. vLLM's
defaults but float32, blocks of 32, greedy, no stop at end-of-text, and prefix caching off (each
timed run would find the warm-up's prompts cached).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(model_dir: str, batches_path: str) -> None:
    from vllm import LLM, SamplingParams

    spec = json.loads(Path(batches_path).read_text())
    t0 = time.perf_counter()
    llm = LLM(model=model_dir, dtype="float32", block_size=32, max_model_len=1024,
              enable_prefix_caching=False, seed=0)
    ready_s = time.perf_counter() - t0
    params = SamplingParams(temperature=0.0, max_tokens=spec["max_tokens"], ignore_eos=True)
    out = {"ready_s": ready_s, "batches": {}}
    for name, prompts in spec["batches"].items():
        llm.generate(prompts, params, use_tqdm=False)  # warm-up
        times = []
        for _ in range(spec["repeats"]):
            t0 = time.perf_counter()
            results = llm.generate(prompts, params, use_tqdm=False)
            times.append(time.perf_counter() - t0)
        out["batches"][name] = {"seconds": times,
                                "token_ids": [list(r.outputs[0].token_ids) for r in results]}
    print("KVVIZ-RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
