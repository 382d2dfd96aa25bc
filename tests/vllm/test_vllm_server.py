"""Node 04 against a real vLLM (tests/vllm_support.py: one eager server per session): our engine
gives vLLM's tokens for the same prompts; the watcher, subscribed before any request, rebuilds
vLLM's cache tree from its live events with the hashes our engine computes; node 04's state
compares both engines request by request; a session recorded from it (kvviz/nodes/vllm/record.py)
plays back into the tree rows and cards the live watcher gave. (The watcher alone against the
same server, metrics, replay and eviction: tests/vllm/test_vllm_watch_server.py.)"""

from __future__ import annotations

import pytest
import vllm_support

from engine import Engine, EngineConfig
from kvviz.nodes.prompts import MORE_QUESTIONS
from kvviz.nodes.vllm import record
from kvviz.nodes.vllm.scenario import LESSON_QUESTIONS, MAX_NEW_TOKENS, Mirror, prompt_for
from kvviz.nodes.vllm.state import VllmState
from kvviz.nodes.vllm.view import cards_html, trunk_html, vllm_rows
from vllm_watch import client
from vllm_watch.defaults import BLOCK_SIZE, MODEL_NAME, NUM_BLOCKS
from vllm_watch.playback import play
from vllm_watch.recording import parse

# (one worker under pytest-xdist: the session's one vLLM serves every test that needs it)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vllm")]

PROMPTS = ["The KV cache", "Free memory is broken into", "A page table maps", "def f(x):\n    return"]


def test_our_engine_gives_vllms_greedy_tokens(srv):
    engine = Engine(EngineConfig(num_blocks=NUM_BLOCKS, block_size=BLOCK_SIZE))
    for prompt in PROMPTS:
        theirs = client.complete(srv.url, MODEL_NAME, prompt, 48)
        ours = engine.generate([prompt], 48)[0]
        assert theirs.prompt_token_ids == tuple(prompt.encode())
        assert list(theirs.token_ids) == ours.token_ids, prompt


def test_three_requests_sharing_a_prefix_rebuild_one_trunk_with_our_hashes(srv, watcher):
    before = watcher.latest().last_seq
    mirror = Mirror()
    for q in LESSON_QUESTIONS[:3]:
        c = client.complete(srv.url, MODEL_NAME, prompt_for(q), MAX_NEW_TOKENS)
        [(ours, _)] = mirror.serve([prompt_for(q)])
        assert list(c.token_ids) == ours
    snap = watcher.wait_for(lambda s: s.last_seq is not None and s.last_seq > (before or -1)
                            and set(mirror.block_hashes().values()) <= {b.block_hash for b in s.tree.blocks})
    ours = mirror.block_hashes()
    assert len(ours) == 3 + 3 * 2  # the system prompt's 3 blocks once, 2 more per question
    by_hash = snap.tree.by_hash()
    trunk = [h for h in ours.values() if sum(b.parent_hash == h for b in snap.tree.blocks) >= 3]
    assert len(trunk) == 1 and snap.tree.prefix_tokens(trunk[0]) == tuple(prompt_for("")[:96].encode())
    assert all(snap.tree.hash_checked(h) for h in ours.values())
    assert all(by_hash[h].tokens for h in ours.values())


def test_node_state_compares_both_engines_request_by_request(srv, hostile):
    state = VllmState(endpoints=vllm_support.endpoints(srv))
    state.attach().wait_for(lambda s: s.status == "connected")
    state.poll()
    assert state.send_lesson_questions()
    assert not state.send("")  # refused, with a reason
    assert state.notice.startswith("Type a prompt first")
    assert state.send(hostile)  # sent as text; shown escaped (tests/ui/test_vllm_node.py)
    for _ in range(20):
        state.poll(wait=60)
        if not any(e.pending for e in state.exchanges):
            break
    assert [e.question for e in state.exchanges] == [*LESSON_QUESTIONS, hostile]
    assert all(e.first_divergence is None and len(e.our_ids) == MAX_NEW_TOKENS for e in state.exchanges)
    assert all(e.vllm_cached is not None for e in state.exchanges)
    state.attach().wait_for(lambda s: set(state.our_hashes.values()) <= {b.block_hash for b in s.tree.blocks})


def test_a_recorded_session_plays_back_what_the_live_watcher_computed(srv):
    """Recorded from this server (after the tests above: the recorder replays what came before),
    the recording played through the watcher's code gives the live watcher's tree rows and cards."""
    data, live = record.session(srv, [[LESSON_QUESTIONS[0], MORE_QUESTIONS[2]], [MORE_QUESTIONS[3]]])
    played = play(parse(data))
    assert played.last.tree == live.tree and played.last.metrics == live.metrics
    assert played.last.last_seq == live.last_seq and len(data["exchanges"]) == 3
    shown_live, shown_played = (VllmState(endpoints=vllm_support.endpoints(srv)) for _ in range(2))
    shown_live.live, shown_played.live = live, played.last
    assert vllm_rows(shown_live) == vllm_rows(shown_played) and vllm_rows(shown_live)
    assert cards_html(shown_live) == cards_html(shown_played) and "–" not in cards_html(shown_played)
    assert trunk_html(shown_live) == trunk_html(shown_played)
