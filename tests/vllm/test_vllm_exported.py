"""Node 04 in the static export (kvviz/nodes/vllm/exported.py): the state shows the shipped vLLM
recording at any of its snapshots, whatever vLLM does, with the recorded requests and our
engine's side, and steps back through them as the export's recorder walks a node."""

from __future__ import annotations

import pytest

from kvviz.export.recipes import recipes
from kvviz.nodes.vllm.state import VllmState
from kvviz.nodes.vllm.text import status_line
from kvviz.nodes.vllm.view import VllmView, cards_html, trunk_html
from vllm_watch.snapshot import Endpoints

NOBODY = Endpoints("http://127.0.0.1:9", "ipc:///nonexistent/kvviz-events", "ipc:///nonexistent/kvviz-replay")


@pytest.fixture(scope="module")
def state():
    s = VllmState(endpoints=NOBODY)
    VllmView(state=s)
    recipes()["vllm"].branches["r"](s)  # the recipe's one branch: the recording's end
    return s


def test_the_recipe_shows_the_recordings_last_snapshot_with_both_engines_answers(state):
    steps = state.recording.steps
    assert state.step_count == len(steps) - 1 and state.live is steps[-1][1]
    assert not state.replaying and state.server is None
    assert len(state.exchanges) == len(state.recording.recording.exchanges)
    assert all(e.our_ids and e.first_divergence is None for e in state.exchanges)  # our engine served them
    kind, said = status_line(state)
    assert kind == "recording" and said.startswith("A recording, not live: vLLM ")
    # (a static page)
    assert state.recording.recording.vllm_version in said and "When a vLLM answers" not in said
    assert 'data-trunk="3"' in trunk_html(state)


def test_stepping_back_walks_every_recorded_snapshot_to_the_first(state):
    steps, seen = state.recording.steps, []
    while True:
        seen.append((state.step_count, state.live, state.replaying, cards_html(state)))
        if not state.step_back():
            break
    assert [i for i, *_ in seen] == list(range(len(steps) - 1, -1, -1))
    assert all(live is steps[i][1] for i, live, *_ in seen)
    assert all(replaying == (i < len(steps) - 1) for i, _, replaying, _ in seen)  # "Replaying…" on the way
    assert len({cards for *_, cards in seen}) > 3  # the cards change along the recording
    assert state.step_count == 0 and not state.step_back()
    state.show_recorded()
    assert state.step_count == len(steps) - 1
