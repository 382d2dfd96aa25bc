"""kvviz/web/redraw.py outside a served session: a redraw runs at once, or once at the end of
`held()`, from the state then."""

from __future__ import annotations

from kvviz.web.redraw import Redraw, held


def test_outside_a_session_a_redraw_runs_at_once():
    drawn = []
    Redraw(lambda: drawn.append(1))()
    assert drawn == [1]


def test_held_redraws_run_once_each_at_its_end_in_the_order_first_asked_from_the_state_then():
    state, drawn = {"n": 0}, []
    a = Redraw(lambda: drawn.append(("a", state["n"])))
    b = Redraw(lambda: drawn.append(("b", state["n"])))
    with held():
        for n in range(1, 4):
            state["n"] = n
            b()
            a()
        assert drawn == []
        with held():  # (nested: the outermost ends them)
            a()
        assert drawn == []
    assert drawn == [("b", 3), ("a", 3)]
    a()
    assert drawn[-1] == ("a", 3) and len(drawn) == 3


def test_held_draws_what_was_asked_even_when_what_it_held_raised():
    drawn = []
    try:
        with held():
            Redraw(lambda: drawn.append(1))()
            raise KeyError("x")
    except KeyError:
        pass
    assert drawn == [1]
    Redraw(lambda: drawn.append(2))()
    assert drawn == [1, 2]  # (nothing held after it)


def test_an_update_runs_at_once_and_inside_held_once_at_its_end():
    from kvviz.web.redraw import Update

    state, written = {"n": 0}, []
    update = Update(lambda: written.append(state["n"]))
    update()  # (at once: in a served session too, unlike a redraw, which waits for the next tick)
    assert written == [0]
    with held():
        for n in (1, 2):
            state["n"] = n
            update()
        assert written == [0]
    assert written == [0, 2]
