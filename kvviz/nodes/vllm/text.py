"""Node 04's prose, card table and status lines (static: user text never goes through these,
except where a view escapes it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kvviz import formatting as fmt
from kvviz.nodes.vllm.scenario import MAX_NEW_TOKENS
from vllm_watch.defaults import BLOCK_SIZE

TITLE = "A real engine"

PROSE = f"""
## 04 · A real engine: vLLM's own KV cache

* The three nodes above run kvviz's small engine. Here the same ideas run in **vLLM**, a serving
  engine used in production, here on a CPU with the *same trained weights*.
* vLLM announces every change to its prefix cache as an **event**: blocks stored (with their
  tokens and a hash), blocks removed. The tree below is rebuilt from those events alone.
* A block's **hash** covers its own tokens and the hash of the block before it, so it names the
  whole prefix: two requests that share a system prompt get the same hashes for its blocks, and
  vLLM stores them once.
* Blocks here hold **{BLOCK_SIZE} tokens**, not the 16 of nodes 01–03: vLLM's CPU build only runs
  blocks of a multiple of 32, so kvviz's engine uses {BLOCK_SIZE} too, to compare block for block.
* Beside it, kvviz's engine serves the same requests: same tokens, same blocks, **same hashes**.
"""

TRY_RECORDED = ("Try it: press **Replay the recording** and watch vLLM's cache grow: node 03's four "
                "questions arrive together, store the system prompt's three blocks once, then branch; the "
                "two questions after them find those blocks cached (the prefix hit rate rises).")

TRY = ("Try it: press **Send the lesson's four questions**: the system prompt's three blocks appear once, "
       f"with four branches. Then send your own question. Each request generates {MAX_NEW_TOKENS} tokens in "
       "both engines; the list at the bottom compares them token for token.")

LIMITS = """
### What vLLM's event stream cannot show

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
VLLM_TREE_EMPTY = "vLLM's cache holds no full block yet: its blocks appear here as requests arrive."
OUR_TREE_EMPTY = "kvviz's engine has served nothing yet: its blocks appear here when vLLM answers."
SAME, VLLM_ONLY, OURS_ONLY = "#009E73", "#56B4E9", "#dddddd"


def short_hash(h: int) -> str:
    return f"#{h:016x}"[:9]


def recording_words(played) -> str:
    r = played.recording
    when = (r.recorded.replace("T", " at ").replace("Z", " UTC")[:-7] + " UTC" if "T" in r.recorded
            else r.recorded)
    return (f"vLLM {r.vllm_version} (its CPU build, serving kvviz's model) recorded on {when}, answering "
            f"node 03's four questions together, then {len(r.exchanges) - 4} more one at a time")


def status_line(state, now: float | None = None) -> tuple[str, str]:
    """(kind, sentence) for the status line, kind 'connected', 'recording', 'disconnected' or
    'waiting'. (How to start a vLLM is for the teacher: docs/vllm.md, /teacher; not said here.)"""
    live, server = state.live, state.server
    now = time.time() if now is None else now
    if live is not None and live.status == "connected":
        m, e = live.metrics, live.endpoints
        pool = (
            f"a pool of {m.num_blocks} blocks of {m.block_size} tokens" if m and m.num_blocks else "its pool")
        return "connected", (f"Live: vLLM at {e.url}, serving the model {live.model!r} with {pool}; "
                             f"KV events from {e.events}.")
    played = state.recording
    shown = (f"Shown meanwhile, a recording: {recording_words(played)}." if played is not None
             else f"No recording to show either: {state.recording_error}")
    if server is not None and server.status == "disconnected":
        return "disconnected", (f"vLLM at {server.endpoints.url} stopped answering "
                                f"{round(now - server.since)} s ago; this node reconnects by itself when it "
                                f"is back. {shown}")
    if played is not None and getattr(state, "static", False):  # (a static page: nothing to connect to)
        return "recording", f"A recording, not live: {recording_words(played)}."
    if played is not None:
        return "recording", (f"A recording, not live: {recording_words(played)}. When a vLLM answers here, "
                             "this node shows it live instead.")
    return "waiting", f"No vLLM answers. {shown}"


@dataclass(frozen=True)
class LiveCard:
    label: str
    value: Callable  # (VllmState) -> str
    counts: str  # what it counts, in a student's words
    source: str  # where the number comes from: vLLM's metric names (in the card's tooltip)


def _m(state, field_name: str):
    live = state.live
    m = live.metrics if live is not None and live.status in ("connected", "recording") else None
    return None if m is None else getattr(m, field_name)


def _or_dash(v, f) -> str:
    return "–" if v is None else f(v)


CARDS = (
    LiveCard("KV USAGE", lambda s: _or_dash(_m(s, "kv_usage"), lambda v: f"{fmt.percent(v)}%"),
             "Share of vLLM's memory blocks held by requests being computed now.",
             "vllm:kv_cache_usage_perc"),
    LiveCard("CACHED BLOCKS",
             lambda s: _or_dash(_m(s, "num_blocks"), lambda n: f"{len(s.live.tree.blocks)} / {n}"),
             "Blocks kept in vLLM's prefix cache / blocks in its memory.",
             "from vLLM's KV events / vllm:cache_config_info num_gpu_blocks"),
    LiveCard("PREFIX HIT RATE", lambda s: _or_dash(_m(s, "hit_rate"), lambda v: f"{fmt.percent(v)}%"),
             "Prompt tokens vLLM found already cached, so did not compute again.",
             "vllm:prefix_cache_hits_total ÷ vllm:prefix_cache_queries_total"),
    LiveCard("RUNNING · WAITING",
             lambda s: _or_dash(_m(s, "running"), lambda v: f"{int(v)} · {int(_m(s, 'waiting'))}"),
             "Requests being computed now · requests queued for memory.",
             "vllm:num_requests_running · vllm:num_requests_waiting"),
    LiveCard("PREEMPTIONS", lambda s: _or_dash(_m(s, "preemptions"), lambda v: str(int(v))),
             "Times vLLM paused a request and took its blocks back to make room.",
             "vllm:num_preemptions_total"),
)
