"""Node 04 without a browser and without a server: cheap to build for every session, one watcher
per process, the recording (and no command for the teacher) when no vLLM answers, user text
escaped, vLLM's tree (from the recorded events, tests/fixtures/vllm) drawn with its shared trunk,
which is node 03's system prompt, and those events' tokens and hashes our engine's."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from engine import Engine, EngineConfig
from kvviz.lesson import Lesson
from kvviz.nodes import KEYS
from kvviz.nodes.vllm import shipped
from kvviz.nodes.vllm.scenario import MAX_NEW_TOKENS, Exchange, prompt_for
from kvviz.nodes.vllm.state import VllmState
from kvviz.nodes.vllm.view import VllmView, exchanges_html, notice_html, status_html, trunk_html, vllm_rows
from vllm_watch import monitor
from vllm_watch.cache_tree import CacheTree
from vllm_watch.metrics import parse_metrics
from vllm_watch.recording import RecordingError
from vllm_watch.snapshot import Endpoints, VllmSnapshot
from vllm_watch.wire import block_hashes, decode_frames

RECORDED = json.loads((Path(__file__).parents[1] / "fixtures" / "vllm" / "frames.json").read_text())
BS = RECORDED["block_size"]
NOBODY = Endpoints("http://127.0.0.1:9", "ipc:///nonexistent/kvviz-events", "ipc:///nonexistent/kvviz-replay")


def watcher_threads() -> int:
    return sum(t.name == monitor.THREAD_NAME for t in threading.enumerate())


def recorded_tree() -> CacheTree:
    tree = CacheTree()
    for msg in RECORDED["frames"]:
        tree.apply(decode_frames([bytes.fromhex(f) for f in msg]))
    return tree


def recorded_snapshot() -> VllmSnapshot:
    metrics = parse_metrics(RECORDED["metrics"])
    return VllmSnapshot(1, "connected", NOBODY, "kvviz", metrics, recorded_tree().view(), (), 6, time.time(),
                        0)


def test_recorded_hashes_and_tokens_are_our_engines():
    """Our engine, same prompts, same block size: the same tokens and so the same block hashes."""
    engine = Engine(EngineConfig(num_blocks=64, block_size=BS, prefix_sharing=True))
    view = recorded_tree().view()
    for answer in RECORDED["answers"]:
        ours = engine.generate([prompt_for(answer["question"])], MAX_NEW_TOKENS)[0].token_ids
        assert ours == answer["token_ids"]
        tokens = list(prompt_for(answer["question"]).encode()) + ours[:-1]  # (the last token has no KV)
        assert set(block_hashes(tokens, BS)) <= {b.block_hash for b in view.blocks}
    assert [a["cached_tokens"] for a in RECORDED["answers"]] == [0, 96, 96]


def test_the_recorded_trunk_is_node_03s_system_prompt():
    view = recorded_tree().view()
    [root] = [b for b in view.blocks if b.parent_hash is None]
    trunk, children = [root], {}
    for b in view.blocks:
        children.setdefault(b.parent_hash, []).append(b)
    while len(children.get(trunk[-1].block_hash, [])) == 1:
        trunk.append(children[trunk[-1].block_hash][0])
    prompt = bytes(t for b in trunk for t in b.tokens).decode()
    assert prompt_for("x").startswith(prompt)


def test_node_04_sits_between_radix_and_explain_it_back():
    assert KEYS.index("vllm") == KEYS.index("radix") + 1 and KEYS[-1] == "explain"


def test_every_session_builds_the_state_without_connecting():
    before = watcher_threads()
    lesson = Lesson({})
    assert isinstance(lesson.states["vllm"], VllmState)
    assert lesson.states["vllm"].live is None and watcher_threads() == before


def test_sessions_share_one_watcher_per_server():
    a, b = VllmState(endpoints=NOBODY), VllmState(endpoints=NOBODY)
    assert a.attach() is b.attach() is monitor.shared(NOBODY)
    assert sum(t.name == monitor.THREAD_NAME for t in threading.enumerate()) >= 1
    assert a.attach()._thread is b.attach()._thread


def test_without_a_server_the_node_shows_the_recording_and_no_command():
    state = VllmState(endpoints=NOBODY)
    VllmView(state=state)
    time.sleep(1.5)  # (the watcher tries once a second)
    state.poll()
    out = status_html(state)
    assert 'data-state="recording"' in out and "A recording, not live" in out and "make vllm" not in out
    assert not state.send("What is a block?")
    assert "recording" in state.notice and "make vllm" not in state.notice
    assert vllm_rows(state) and trunk_html(state)


def test_without_a_server_or_a_recording_the_node_says_why(monkeypatch):
    monkeypatch.setattr(shipped, "shipped", lambda: RecordingError("no recording at x.json"))
    state = VllmState(endpoints=NOBODY)
    view = VllmView(state=state)
    out = status_html(state)
    assert 'data-state="waiting"' in out and "No vLLM answers" in out and "no recording at x.json" in out
    assert vllm_rows(state) == [] and trunk_html(state) == "" and not view.replay.visible


def test_the_tree_shows_the_shared_trunk_from_recorded_events():
    state = VllmState(endpoints=NOBODY)
    state.live = recorded_snapshot()
    rows = vllm_rows(state)
    assert len(rows) == len(state.live.tree.blocks) == 3 + 3 * 2
    assert rows[0].label.startswith("You are a patient") and rows[2].sub.endswith("3 branches")
    out = trunk_html(state)
    assert 'data-trunk="3" data-branches="3"' in out and "Shared trunk: 3 blocks" in out
    assert "Live: vLLM" in status_html(state)


def test_user_text_and_vllm_text_are_escaped(hostile):
    state = VllmState(endpoints=NOBODY)
    state.exchanges = [Exchange(hostile, (1,), hostile, 0, (1,), hostile, 0),
                       Exchange(hostile, error=hostile)]
    out = exchanges_html(state)
    assert hostile not in out and "&lt;img" in out and 'data-verdict="same"' in out
    state.notice = hostile
    assert hostile not in notice_html(state) and "&lt;img" in notice_html(state)
