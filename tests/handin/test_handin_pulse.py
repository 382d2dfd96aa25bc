"""The class pulse (kvviz/handin/pulse.py, pulse_html.py) without a browser: what the class
predicted per question, with the engine's answer hidden until revealed, read back from a store
(SQLite and PostgreSQL), as HTML that keeps hostile values as text, and on the teacher page."""

from __future__ import annotations

import re

from kvviz.handin import key
from kvviz.handin.model import HandIn
from kvviz.handin.pulse import MAX_BARS, pulse
from kvviz.handin.pulse_html import pulse_html
from kvviz.handin.storage import Store

Q_RADIX = "Predict first: how many blocks will BLOCKS STORED read?"
Q_FRAG = "Predict first: will R2's slab be admitted or refused?"


def sid(i: int) -> str:
    return f"{i:032x}"


def student(i: int, radix: str | None = None, frag: str | None = None, check: str | None = None) -> HandIn:
    preds = []
    if radix is not None:
        preds.append({"node": "radix", "question": Q_RADIX, "predicted": radix, "outcome": "18",
                      "right": radix == "18"})
    if frag is not None:
        preds.append({"node": "fragmentation", "question": Q_FRAG, "predicted": frag, "outcome": "refused",
                      "right": frag == "refused"})
    checks = [] if check is None else [{"key": "gap_after_free", "question": "What will LARGEST GAP read?",
                                        "typed": check, "outcome": "8", "right": check == "8"}]
    return HandIn.make(sid(i), f"Student {i}", predictions=preds, checks=checks)


def the_class() -> list[HandIn]:
    radix = ["9"] * 3 + ["18"] * 5 + ["20"]
    frag = ["admitted"] * 4 + ["refused"] * 2
    return [student(i, radix=radix[i] if i < len(radix) else None, frag=frag[i] if i < len(frag) else None,
                    check="8" if i < 2 else None) for i in range(10)]


def bars(p):
    return [(b.value, b.count, b.engine) for b in p.bars]


def test_each_question_counts_each_students_prediction_and_hides_the_engine():
    radix, frag, check = pulse(the_class())
    assert (radix.node, radix.question, radix.students) == ("radix", Q_RADIX, 9)
    assert bars(radix) == [("9", 3, False), ("18", 5, False), ("20", 1, False)]  # numbers ascending
    assert bars(frag) == [("admitted", 4, False), ("refused", 2, False)]
    assert (check.kind, check.node, bars(check)) == ("check", "gap_after_free", [("8", 2, False)])
    assert radix.outcomes == [] and radix.sentence() == (
        "3 predicted 9, 5 predicted 18, 1 predicted 20 (the engine's answer is hidden)")


def test_revealed_the_engines_outcome_is_marked_even_when_nobody_predicted_it():
    radix, frag, _check = pulse(the_class(), reveal=True)
    assert bars(radix) == [("9", 3, False), ("18", 5, True), ("20", 1, False)]
    assert radix.sentence() == "3 predicted 9, 5 predicted 18, 1 predicted 20 (the engine: 18)"
    (nobody,) = pulse([student(1, radix="9"), student(2, radix="20")], reveal=True)
    assert bars(nobody) == [("9", 1, False), ("18", 0, True), ("20", 1, False)]
    assert frag.outcomes == [("refused", 6)]


def test_hidden_nothing_depends_on_the_outcome():
    a = the_class()
    b = [HandIn.make(h.student_id, h.name,
                     predictions=[{**p.to_json(), "outcome": "something else"} for p in h.predictions],
                     checks=h.checks) for h in a]
    assert [bars(p) for p in pulse(a)] == [bars(p) for p in pulse(b)]


def test_a_student_counts_once_per_question_with_their_last_prediction_and_spellings_merge():
    h = HandIn.make(sid(1), "Ada", predictions=[
        {"node": "fragmentation", "question": Q_FRAG, "predicted": "admitted", "outcome": "refused"},
        {"node": "fragmentation", "question": Q_FRAG, "predicted": "refused", "outcome": "refused"}])
    (p,) = pulse([h, student(2, frag="Refused"), student(3, frag=" ")])
    assert p.students == 2 and bars(p) == [("refused", 2, False)]


def test_many_different_values_share_an_other_answers_bar_and_the_engine_keeps_its_own():
    values = [str(10 + i) for i in range(MAX_BARS + 3)]
    handins = [student(i, radix=v) for i, v in enumerate(values)] + [student(99, radix="10")]
    (hidden,) = pulse(handins)
    assert len(hidden.bars) == MAX_BARS + 1 and hidden.bars[-1].other
    assert hidden.bars[-1].value == "3 other answers" and hidden.bars[-1].count == 3
    assert sum(b.count for b in hidden.bars) == hidden.students == len(handins)
    (shown,) = pulse(handins, reveal=True)
    assert ("18", 1, True) in bars(shown)


def test_the_pulse_reads_the_stored_class(class_db):
    store = Store(class_db)
    for h in the_class():
        store.save(h)
    store.save(student(0, radix="20"))  # a student hands in again: their new prediction replaces the old
    radix = next(p for p in pulse(store.handins(), reveal=True) if p.node == "radix")
    assert bars(radix) == [("9", 2, False), ("18", 5, True), ("20", 2, False)]


def test_the_pulse_html_keeps_hostile_values_as_text(hostile):
    evil = HandIn.make(sid(1), "Eve",
                       predictions=[{"node": hostile, "question": hostile, "predicted": hostile,
                                                    "outcome": hostile}],
                       checks=[{"key": hostile, "question": hostile, "typed": hostile, "outcome": hostile}])
    for reveal in (False, True):
        page = pulse_html(pulse([evil], reveal), reveal)
        assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
        assert re.findall(r'style="([^"]*)"', page) == ["width:100%"] * 2


def test_the_pulse_html_shows_counts_the_mark_and_the_sentence():
    hidden = pulse_html(pulse(the_class()), False)
    assert "◀ the engine" not in hidden and 'data-engine="true"' not in hidden
    assert "3 predicted 9, 5 predicted 18, 1 predicted 20 (the engine&#x27;s answer is hidden)" in hidden
    shown = pulse_html(pulse(the_class(), reveal=True), True)
    assert shown.count("◀ the engine") == 3 and "(the engine: 18)" in shown
    assert 'style="width:100%"' in shown and 'style="width:60%"' in shown  # 3 of the most, 5
    assert "No predictions" in pulse_html([], False)


def test_the_teacher_page_hides_then_reveals_and_shows_the_pulse_alone(tmp_path, monkeypatch):
    from kvviz.handin import teacher_view

    monkeypatch.setenv(key.ENV, "open sesame")
    store = Store(tmp_path / "class.db")
    store.save(student(1, radix="9"))
    page = teacher_view.TeacherPage(store=store)
    assert page.unlock("open sesame")
    assert "1 predicted 9 (the engine&#x27;s answer is hidden)" in page.pulse.object
    store.save(student(2, radix="18"))
    page.refresh()  # (what the page's poll does)
    assert "1 predicted 9, 1 predicted 18 (the engine&#x27;s" in page.pulse.object
    page.reveal_button.clicks += 1
    assert "(the engine: 18)" in page.pulse.object and page.reveal_button.label.startswith("Hide")
    page.reveal_button.clicks += 1
    assert "(the engine: 18)" not in page.pulse.object
    page.only_button.clicks += 1
    assert not page.details.visible and page.pulse.visible
    page.only_button.clicks += 1
    assert page.details.visible
