"""vLLM's offline `LLM`, in process, generating for batches of prompts: run with vLLM's Python.

    .venv-vllm/bin/python benchmarks/vllm_offline.py MODEL_DIR BATCHES.json   # prints JSON

benchmarks/vs_vllm.py runs this as a subprocess (vLLM lives in its own virtual environment) and
times our engine on the same batches. BATCHES.json: {"max_tokens": 64, "repeats": 3, "batches":
{"16": [prompt, ...], ...}}. For each batch: one warm-up generate (vLLM compiles and captures on
first use), then `repeats` timed ones; printed: the wall time of each and the token ids of the
last. vLLM's defaults (its compiled path, its own thread binding) except: float32, blocks of 32,
prefix caching off (each timed run would otherwise find the warm-up's prompts cached), greedy,
no stop at an end-of-text token. Standard library and vllm only.
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
