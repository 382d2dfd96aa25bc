"""Handing in from a node's prediction (issue 12): one hand-in controller per session, shared by
the explain box and the compact box under each node's resolved prediction; views built alone."""

from __future__ import annotations

import pytest

from kvviz.handin.storage import Store


def sid(i: int) -> str:
    return f"{i:032x}"


@pytest.fixture
def lesson(tmp_path):
    from kvviz.lesson import Lesson

    lesson = Lesson({})
    lesson.handin.store = Store(tmp_path / "class.db")
    return lesson


def row_of(view):
    """The hand-in box under a node view's prediction panel (None until a verdict has shown)."""
    return view.prediction.after


def test_a_node_offers_a_hand_in_only_once_its_prediction_is_resolved(lesson):
    view, frag = lesson.view("fragmentation"), lesson.states["fragmentation"]
    assert row_of(view) is None  # nothing asked yet: no box built
    frag.predict("refused")
    assert row_of(view) is None  # locked in, not yet resolved
    frag.free_r2()
    row = row_of(view)
    assert row is not None and view.prediction.below.visible and row.session is lesson.handin
    assert row.compact and row.where == "fragmentation" and row.button.name == "Hand in to the teacher"


def test_handing_in_from_node_01_then_from_explain_updates_one_row_and_shares_the_rate_limit(lesson):
    store = lesson.handin.store
    frag = lesson.states["fragmentation"]
    node = lesson.view("fragmentation")
    frag.predict("admitted")
    frag.free_r2()
    row = row_of(node)
    row.student.student_id = sid(7)
    row.name_box.value = "Ada"
    first = row.hand_in()
    assert first is not None and first.submissions == 1 and store.count() == 1
    (p,) = store.get(sid(7)).predictions
    assert (p.node, p.predicted, p.outcome, p.right) == ("fragmentation", "admitted", "refused", False)
    assert "Handed in at" in row.status.object and "“Ada”" in row.status.object

    explain = lesson.view("explain")  # built after: the name and the confirmation are already there
    box = explain.handin_box
    assert (box.session is lesson.handin and box.name_box.value == "Ada"
            and "Handed in at" in box.status.object)
    lesson.states["explain"].answer = "Paging borrows virtual memory."
    assert box.hand_in() is None and "wait" in box.status.object  # the same session's rate limit
    assert "wait" not in row.status.object  # an error shows only where the button was pressed
    lesson.handin.limit.last -= 10
    again = box.hand_in()
    assert again.submissions == 2 and store.count() == 1
    stored = store.get(sid(7))
    assert stored.answer == "Paging borrows virtual memory." and len(stored.predictions) == 1
    assert "hand-in 2" in row.status.object  # the confirmation shows in every box


def test_a_name_typed_in_one_box_prefills_the_others_and_an_empty_one_is_refused_there(lesson):
    lesson.states["fragmentation"].predict("refused")
    lesson.states["fragmentation"].free_r2()
    frag = row_of(lesson.view("fragmentation"))
    frag.student.student_id = sid(8)
    assert frag.hand_in() is None and "name" in frag.status.object and lesson.handin.store.count() == 0
    frag.name_box.value = "  Grace\tH.  "
    explain_box = lesson.view("explain").handin_box
    assert explain_box.name_box.value == "Grace H."
    explain_box.name_box.value = "Grace Hopper"
    assert frag.name_box.value == "Grace Hopper"


def test_a_browser_that_handed_in_before_finds_its_name_in_a_node_box(lesson):
    from kvviz.handin.model import HandIn

    lesson.handin.store.save(HandIn.make(sid(9), "Ada from yesterday"))
    lesson.states["fragmentation"].predict("refused")
    lesson.states["fragmentation"].free_r2()
    row = row_of(lesson.view("fragmentation"))
    row.student.student_id = sid(9)
    assert row.name_box.value == "Ada from yesterday" and "You handed in at" in row.status.object


def test_views_built_without_a_lesson_offer_no_node_hand_in_and_explain_keeps_its_own_box():
    from kvviz.nodes import BY_KEY
    states = {}
    for key in ("fragmentation", *BY_KEY["explain"].needs, "explain"):
        states[key] = states.get(key) or BY_KEY[key].new_state(states)
    frag = states["fragmentation"]
    view = BY_KEY["fragmentation"].new_view(frag)
    frag.predict("refused")
    frag.free_r2()
    assert frag.predictions and view.prediction.below is None  # no session: no box
    box = BY_KEY["explain"].new_view(states["explain"]).handin_box
    assert set(box.session.states) == {*BY_KEY["explain"].needs, "explain"}
