"""The engine gives the same tokens, and reads the same blocks, with either attention backend.

The 'triton' backend runs the kernels of kernels/ — interpreted on CPU (TRITON_INTERPRET=1), so
the model here is tiny and the run short.
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")
for _name in ("kernels.store_kv_kernel", "kernels.decode_attention", "kernels.extend_attention"):
    if _name in sys.modules:  # decorated earlier for another TRITON_INTERPRET: re-decorate
        importlib.reload(sys.modules[_name])

from engine import Engine, EngineConfig, ModelConfig  # noqa: E402

TINY = ModelConfig(num_layers=1, d_model=32, num_heads=4, num_kv_heads=2, d_ff=64, max_seq_len=128)
PROMPTS = ["shared prefix, then a", "shared prefix, then b", "xyz"]


def _run(backend: str) -> tuple[list[list[int]], list[tuple[int, ...]]]:
    """Greedy tokens for PROMPTS with prefix sharing (so prefill extends cached pages), and the
    per-block read counts after each decode step."""
    engine = Engine(
        EngineConfig(num_blocks=24, block_size=4, prefix_sharing=True, backend=backend, device="cpu",
                     model=TINY, weights="random")
    )
    ids = [engine.add_request(p, max_new_tokens=5) for p in PROMPTS]
    reads = []
    while engine.has_unfinished():
        engine.step()
        reads.append(engine.snapshot().block_reads)
    engine.check_integrity()
    snap = engine.snapshot()
    assert snap.metrics.prefix_hit_tokens > 0, "the test must exercise a prefill on top of cached pages"
    assert snap.backend == backend
    return [list(engine.requests[i].output_ids) for i in ids], reads


def test_triton_and_torch_backends_generate_identical_tokens_and_block_reads():
    torch_tokens, torch_reads = _run("torch")
    triton_tokens, triton_reads = _run("triton")
    assert triton_tokens == torch_tokens
    assert triton_reads == torch_reads
    assert any(sum(r) > 0 for r in torch_reads)


def test_block_reads_count_each_running_request_once_per_kv_head(make_engine):
    engine = make_engine(num_blocks=16, block_size=4)
    engine.add_request("abcdefghij", max_new_tokens=4)  # 10 prompt tokens: 3 pages
    engine.step()  # prefill: no decode reads
    assert sum(engine.snapshot().block_reads) == 0
    engine.step()  # decode: reads the 11 cached tokens' 3 pages, once per KV head
    snap = engine.snapshot()
    table = snap.request("R1").block_table
    heads = engine.config.model.num_kv_heads
    assert [snap.block_reads[b] for b in table] == [heads] * len(table)
    assert sum(snap.block_reads) == heads * len(table)
    assert {type(n) for n in snap.block_reads} == {int}  # (plain ints: a snapshot is written as JSON)
