"""Node 04's prose, card table and status lines (static: user text never goes through these,
except where a view escapes it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kvviz import formatting as fmt
from kvviz.nodes.vllm.scenario import MAX_NEW_TOKENS
from kvviz.nodes.vllm.server import BLOCK_SIZE

TITLE = "A real engine"

PROSE = f"""
### 04 · A real engine: vLLM's own KV cache, live

* The three nodes above run kvviz's small engine. Here the same ideas run in **vLLM**, a serving
  engine used in production, here on this machine's CPU with the *same trained weights*.
* vLLM announces every change to its prefix cache as an **event**: blocks stored (with their
  tokens and a hash), blocks removed. The tree below is rebuilt from those events alone.
* A block's **hash** covers its own tokens and the hash of the block before it, so it names the
  whole prefix: two requests that share a system prompt get the same hashes for its blocks, and
  vLLM stores them once. Blocks of {BLOCK_SIZE} tokens, as in both engines here.
* Beside it, kvviz's engine serves the same requests: same tokens, same blocks, **same hashes**.
"""

TRY = (f"Try it: press **Send the lesson's four questions**: the system prompt's three blocks appear once, with "
       f"four branches. Then send your own question. Each request generates {MAX_NEW_TOKENS} tokens in both "
       "engines; the list at the bottom compares them token for token.")

LIMITS = """
#### What vLLM's event stream cannot show

* **No physical block ids and no block tables:** events name blocks by hash, so the tree shows
  what is cached, not where it sits in memory or which request holds it now.
* **A block is removed only when it is evicted.** When a request finishes its blocks stay cached,
  free to be reused, until vLLM needs the memory for something else.
* **Why KV USAGE reads 0% when idle:** it counts blocks held by running requests. Cached blocks
  that no request holds count as free, because vLLM can evict them at once.
"""

QUESTION_LABEL = "Your question, after node 03's system prompt (up to 200 characters)"
VLLM_TREE_TITLE = "vLLM's prefix cache, rebuilt from its KV events (root at the left)"
OUR_TREE_TITLE = "kvviz's engine, same requests: its radix tree, block by block, with vLLM's hash for each"
VLLM_TREE_EMPTY = "vLLM's cache holds no full block yet: send a request."
OUR_TREE_EMPTY = "kvviz's engine has served nothing yet: its blocks appear here when vLLM answers."
SAME, VLLM_ONLY, OURS_ONLY = "#009E73", "#56B4E9", "#dddddd"


def short_hash(h: int) -> str:
    return f"#{h:016x}"[:9]


def status_line(snap, now: float | None = None) -> tuple[str, str]:
    """(state, sentence) for the status line: 'connected', 'waiting' or 'disconnected'."""
    if snap is None:
        return "waiting", "Connecting to vLLM…"
    e, now = snap.endpoints, time.time() if now is None else now
    if snap.status == "connected":
        m = snap.metrics
        pool = f"a pool of {m.num_blocks} blocks of {m.block_size} tokens" if m and m.num_blocks else "its pool"
        return "connected", (f"Connected to vLLM at {e.url}, serving the model {snap.model!r} with {pool}; "
                             f"KV events from {e.events}.")
    if snap.status == "disconnected":
        return "disconnected", (f"Disconnected: vLLM at {e.url} stopped answering {round(now - snap.since)} s ago. "
                                "Reconnecting by itself when it is back (start it again with `make vllm`).")
    return "waiting", (f"No vLLM answers at {e.url}. Start one in a second terminal with `make vllm` "
                       "(the first time it installs vLLM, a few minutes); this node connects by itself. "
                       "Another server: set KVVIZ_VLLM_URL and KVVIZ_VLLM_EVENTS before `make lesson`.")


@dataclass(frozen=True)
class LiveCard:
    label: str
    value: Callable  # (VllmState) -> str
    counts: str


def _m(state, field_name: str):
    m = state.live.metrics if state.live is not None and state.connected else None
    return None if m is None else getattr(m, field_name)


def _or_dash(v, f) -> str:
    return "–" if v is None else f(v)


CARDS = (
    LiveCard("KV USAGE", lambda s: _or_dash(_m(s, "kv_usage"), lambda v: f"{fmt.percent(v)}%"),
             "vllm:kv_cache_usage_perc: blocks held by running requests ÷ blocks in the pool."),
    LiveCard("CACHED BLOCKS", lambda s: _or_dash(_m(s, "num_blocks"), lambda n: f"{len(s.live.tree.blocks)} / {n}"),
             "Blocks in vLLM's prefix cache (from its events) / blocks in its pool (vllm:cache_config_info)."),
    LiveCard("PREFIX HIT RATE", lambda s: _or_dash(_m(s, "hit_rate"), lambda v: f"{fmt.percent(v)}%"),
             "vllm:prefix_cache_hits_total ÷ vllm:prefix_cache_queries_total: prompt tokens found cached."),
    LiveCard("RUNNING · WAITING", lambda s: _or_dash(_m(s, "running"), lambda v: f"{int(v)} · {int(_m(s, 'waiting'))}"),
             "vllm:num_requests_running and vllm:num_requests_waiting, now."),
    LiveCard("PREEMPTIONS", lambda s: _or_dash(_m(s, "preemptions"), lambda v: str(int(v))),
             "vllm:num_preemptions_total: requests whose blocks vLLM took back to make room."),
)
