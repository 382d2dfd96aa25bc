"""The watcher against a real vLLM (tests/vllm_support.py: the session's one eager server, shared
with tests/vllm/test_vllm_server.py): metrics parse from the live server and reach the watcher's
history; a watcher that joins late gets the missed events from the replay socket; blocks vLLM
evicts leave the rebuilt tree, and only through its BlockRemoved events."""

from __future__ import annotations

import time

import pytest
import vllm_support

from vllm_watch import client
from vllm_watch.defaults import BLOCK_SIZE, MODEL_NAME, NUM_BLOCKS
from vllm_watch.monitor import Monitor

# (one worker under pytest-xdist: the session's one vLLM serves every test that needs it)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vllm")]

# Five full blocks of 32 tokens (bytes) and a few more: sent twice, the second finds them cached.
PROMPT = ("A prefix cache keeps the KV of every full block of a prompt, so a later request that "
          "starts with the same tokens skips their prefill and reads them where they already are.")


def test_metrics_are_parsed_from_the_live_server(srv, watcher):
    # The same request twice: the second finds its blocks cached (this test does not
    # count on what others sent: under pytest-xdist the session's vLLM may be fresh here).
    for _ in range(2):
        client.complete(srv.url, MODEL_NAME, PROMPT, 8)
    deadline = time.monotonic() + 60
    m = client.fetch_metrics(srv.url)
    while not m.prefix_hits and time.monotonic() < deadline:  # (vLLM publishes its counters as it logs)
        time.sleep(0.5)
        m = client.fetch_metrics(srv.url)
    assert (m.num_blocks, m.block_size, m.hash_algo) == (NUM_BLOCKS, BLOCK_SIZE, "sha256")
    assert m.prefix_hits > 0 and m.prefix_queries > m.prefix_hits
    assert client.served_model(srv.url) == MODEL_NAME
    snap = watcher.wait_for(lambda s: s.metrics is not None and s.metrics.prefix_hits == m.prefix_hits)
    assert snap.history and snap.history[-1].hit_rate == pytest.approx(m.hit_rate)


def test_a_watcher_that_joins_late_replays_what_it_missed(srv, watcher):
    late = Monitor(vllm_support.endpoints(srv)).start()
    try:
        snap = late.wait_for(lambda s: s.status == "connected" and s.last_seq == watcher.latest().last_seq)
        theirs = {b.block_hash for b in watcher.latest().tree.blocks}
        assert {b.block_hash for b in snap.tree.blocks} == theirs
    finally:
        late.stop()


def test_evicted_blocks_leave_the_rebuilt_tree(srv, watcher):
    """Four long prompts of their own need more blocks than the pool's free ones: vLLM evicts
    cached blocks to make room, its BlockRemoved events say which, and they leave the tree."""
    before = watcher.latest()
    cached = {b.block_hash for b in before.tree.blocks}
    for i in range(4):
        words = " ".join(f"page{i}-{k}" for k in range(90))[:700]  # 22 blocks of 32 tokens, nothing shared
        client.complete(srv.url, MODEL_NAME, words, 8)
    snap = watcher.wait_for(lambda s: s.tree.num_removed > before.tree.num_removed and s.metrics is not None
                            and s.metrics.running == 0)
    now = {b.block_hash for b in snap.tree.blocks}
    assert len(now) <= NUM_BLOCKS and cached - now  # some earlier blocks were evicted ...
    assert snap.tree.num_stored - snap.tree.num_removed >= len(now)  # ... and only through BlockRemoved
