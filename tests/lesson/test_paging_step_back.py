"""Node 02 stepped back past an Add request, with its view built (the Block table select's widget
takes part): the prompt box suggests that request's prompt again, unless the student wrote their
own; the block table drawn is the newest request there is then, not the first. So a branch with
one more request reads, before that request, exactly as the branch before it: the recording
copies those states (kvviz/export/walk.py, node 02's one piece) instead of drawing them again."""

from __future__ import annotations

import pytest
from bokeh.document import Document

from kvviz.export.page_models import node_column, page_config


@pytest.fixture
def paging():
    import panel as pn

    from kvviz.lesson import Lesson

    with page_config():
        lesson = Lesson({})
        doc = Document()
        doc.add_root(pn.Column(node_column(lesson, "paging")).get_root(doc))  # (its view, widgets and all)
        yield lesson.states["paging"]


def back_past_the_last_add(state) -> None:
    n = len(state.paged.requests)
    while len(state.paged.requests) == n:
        assert state.step_back()


def test_stepping_back_past_an_add_suggests_its_prompt_again(paging):
    first = paging.prompt
    paging.add_request(settle=True)
    second = paging.prompt
    paging.add_request(settle=True)
    assert paging.prompt not in (first, second)
    back_past_the_last_add(paging)
    assert paging.prompt == second  # (what Add request adds next from here: what it added here before)
    back_past_the_last_add(paging)
    assert paging.prompt == first
    paging.add_request(settle=True)
    assert paging.paged.requests[-1].prompt == first and paging.prompt == second


def test_a_prompt_the_student_wrote_stays_in_the_box_as_the_node_steps_back(paging):
    paging.add_request(settle=True)
    paging.prompt = "my own words"
    back_past_the_last_add(paging)
    paging.rewind()
    assert paging.prompt == "my own words"
    paging.reset()  # (Reset refills it, as a new page has it)
    assert paging.prompt != "my own words"


def test_stepped_back_past_the_chosen_requests_arrival_the_newest_added_request_is_drawn(paging):
    for _ in range(2):
        paging.add_request(settle=True)
    names = [r.name for r in paging.paged.requests]
    assert paging.request == names[-1]
    back_past_the_last_add(paging)
    assert paging.request == names[-2]  # (not the first request: the select's widget took that)
    assert paging.paged.request(paging.request).block_table
    back_past_the_last_add(paging)
    assert paging.request == names[0]  # (none added any more: the first request's, as on a new page)


def test_the_branch_with_one_more_request_reads_as_the_one_before_until_that_request(paging):
    from kvviz.export.recipes import recipes

    recipe = recipes()["paging"]

    def states(branch: str) -> dict[int, tuple]:
        recipe.branches[branch](paging)
        out = {}
        while True:
            out[paging.step_count] = (paging.prompt, paging.request, paging.paged.metrics.blocks_free)
            if not paging.step_back():
                return out
    a1, a2 = states("a1"), states("a2")
    arrival = max(a1)  # (a2 adds its request at a1's end)
    assert all(a2[s] == a1[s] for s in a1 if s < arrival)


def test_a_prompt_being_typed_is_not_written_over_before_it_is_committed(paging):
    """The box's value reaches the state when the student leaves it; a step back can come first.
    From the first key typed (the widget's value_input), no step writes a suggestion over it."""
    first = paging.prompt
    paging.add_request(settle=True)
    suggested = paging.prompt
    paging.typing("my own wor")  # (typed, not committed yet)
    back_past_the_last_add(paging)
    assert paging.prompt == suggested  # (not refilled: the browser's box keeps what is typed in it)
    paging.prompt = "my own words"  # (committed)
    paging.step_back()
    assert paging.prompt == "my own words"
    paging.add_request(settle=True)  # (Add request adds it, here, and refills the box)
    assert paging.paged.requests[-1].prompt == "my own words" and paging.prompt != "my own words"
    back_past_the_last_add(paging)
    assert paging.prompt == first  # (a suggestion again: the stream's next prompt from here)
