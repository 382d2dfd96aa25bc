"""Node 04's recorded vLLM session (assets/vllm-recording.json, `make vllm-recording`), with no
server: the shipped file is small and names its vLLM version and date; played once per process
(kvviz/nodes/vllm/shipped.py), node 04 shows it, labelled a recording, with real cards, vLLM's
answers and our engine's; a replay steps through it. (Playing it, and refusing bad recordings:
tests/vllm/test_vllm_watch_recording.py.)"""

from __future__ import annotations

import pytest

from kvviz.nodes.vllm import shipped
from kvviz.nodes.vllm.scenario import LESSON_QUESTIONS
from kvviz.nodes.vllm.state import VllmState, recorded_side
from kvviz.nodes.vllm.text import CARDS
from kvviz.nodes.vllm.view import VllmView, cards_html, our_rows, status_html, trunk_html, vllm_rows
from vllm_watch.defaults import BLOCK_SIZE, MODEL_NAME, NUM_BLOCKS
from vllm_watch.playback import play
from vllm_watch.recording import RecordingError, load
from vllm_watch.snapshot import Endpoints

NOBODY = Endpoints("http://127.0.0.1:9", "ipc:///nonexistent/kvviz-events", "ipc:///nonexistent/kvviz-replay")


@pytest.fixture(scope="module")
def played():
    """The shipped recording, played once per process (what every session of node 04 shows)."""
    out = shipped.shipped()
    assert not isinstance(out, RecordingError), out
    return out


@pytest.fixture(scope="module")
def shown():
    """Node 04 with no vLLM: the recording, and our engine's side once it has served it."""
    state = VllmState(endpoints=NOBODY)
    VllmView(state=state)
    recorded_side(state.recording).result(timeout=120)
    state.poll()
    return state


def test_the_shipped_recording_is_small_and_says_what_and_when():
    assert shipped.PATH.stat().st_size < 200_000
    rec = load(shipped.PATH)
    assert rec.vllm_version and rec.recorded[:4].isdigit() and rec.model == MODEL_NAME
    assert (rec.block_size, rec.num_blocks) == (BLOCK_SIZE, NUM_BLOCKS)
    assert [e.question for e in rec.exchanges[:4]] == list(LESSON_QUESTIONS)


def test_every_session_shares_the_watchers_playback_of_the_shipped_file(played):
    assert shipped.shipped() is played and play(load(shipped.PATH)).steps == played.steps
    assert played.last.status == "recording"


def test_node_04_without_vllm_shows_the_recording_labelled_with_real_cards(shown, played):
    out = status_html(shown)
    assert 'data-state="recording"' in out and "A recording, not live" in out
    assert played.recording.vllm_version in out and played.recording.day in out
    assert "make vllm" not in out  # (for the teacher: README, docs/vllm.md, /teacher)
    cards = cards_html(shown)
    assert "–" not in cards and f"{len(played.last.tree.blocks)} / {NUM_BLOCKS}" in cards
    assert all(f'title="{c.counts}' in cards.replace("&#x27;", "'") for c in CARDS)
    rows = vllm_rows(shown)
    assert [r.key for r in rows] == [b.block_hash for b in played.last.tree.blocks]
    assert 'data-trunk="3"' in trunk_html(shown)


def test_the_recorded_answers_are_our_engines_token_for_token(shown, played):
    assert [e.question for e in shown.exchanges] == [e.question for e in played.recording.exchanges]
    assert all(e.first_divergence is None and e.our_ids for e in shown.exchanges)
    assert [e.vllm_cached for e in shown.exchanges] == [e.cached_tokens for e in played.recording.exchanges]
    assert set(shown.our_hashes.values()) <= {b.block_hash for b in played.last.tree.blocks}
    assert len(our_rows(shown)) == len(shown.our_hashes)


def test_a_replay_steps_through_the_recording_then_stays_at_its_end(played):
    state = VllmState(endpoints=NOBODY)
    state.attach()
    now = [0.0]
    state.clock = lambda: now[0]
    assert state.replay() and state.replaying and state.live is played.steps[0][1]
    t_mid, mid = played.steps[len(played.steps) // 2]
    now[0] = t_mid
    state.poll()
    assert state.live is played.at(t_mid) and len(state.live.tree.blocks) == len(mid.tree.blocks)
    now[0] = played.steps[-1][0] + 1
    state.poll()
    assert not state.replaying and state.live is played.last


def test_without_vllm_a_send_is_refused_in_words_for_a_student():
    state = VllmState(endpoints=NOBODY)
    assert not state.send("What is a block?")
    assert "recording" in state.notice and "make vllm" not in state.notice
