"""Hand-ins without a browser: the passphrase, what a hand-in reads from the lesson, the class
summary, the CSV, the teacher page's HTML, and the two views driven in Python."""

from __future__ import annotations

import csv
import dataclasses
import io
import multiprocessing as mp
import subprocess
import sys
from pathlib import Path

import pytest

from kvviz.handin import key, report, teacher_html
from kvviz.handin.model import HandIn
from kvviz.handin.storage import Store

ROOT = Path(__file__).resolve().parents[2]
CTX = mp.get_context("fork")


def sid(i: int) -> str:
    return f"{i:032x}"


# -- the passphrase -------------------------------------------------------------------------------
def test_the_environment_sets_the_passphrase_and_nothing_is_stored(tmp_path):
    store = Store(tmp_path / "class.db")
    env = {key.ENV: "  correct horse  "}
    assert key.teacher_key(store, env) == "correct horse"
    assert key.matches("correct horse", store, env) and key.matches(" correct horse ", store, env)
    for wrong in ("correct hors", "", "   ", None, 7, "correct horse" * 100):
        assert not key.matches(wrong, store, env)
    assert not (tmp_path / "class.db").exists()


def _key_of(path: str, out) -> None:
    out.put(key.teacher_key(Store(path), {}))


def test_without_the_environment_one_passphrase_is_generated_for_every_process(tmp_path):
    path, out = str(tmp_path / "class.db"), CTX.Queue()
    procs = [CTX.Process(target=_key_of, args=(path, out)) for _ in range(6)]
    for p in procs:
        p.start()
    keys = {out.get(timeout=60) for _ in procs}
    for p in procs:
        p.join(30)
    assert len(keys) == 1
    (generated,) = keys
    assert len(generated) == 14 and generated.count("-") == 2
    assert key.matches(generated, Store(path), {}) and not key.matches(generated.upper(), Store(path), {})


def test_the_launchers_print_the_passphrase_and_new_replaces_it(tmp_path):
    env = {"KVVIZ_DB": str(tmp_path / "class.db"), "PATH": "/usr/bin:/bin"}
    run = [sys.executable, "-m", "kvviz.handin.key", "--url", "http://x:1/teacher"]
    first = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    again = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    stored = key.teacher_key(Store(tmp_path / "class.db"), {})
    assert first == again and f"passphrase: {stored}" in first and "http://x:1/teacher" in first
    subprocess.run([*run, "--new"], cwd=ROOT, env=env, capture_output=True, check=True)
    assert key.teacher_key(Store(tmp_path / "class.db"), {}) != stored
    told = subprocess.run(run, cwd=ROOT, env={**env, key.ENV: "mine"}, capture_output=True, text=True).stdout
    assert "mine" not in told and key.ENV in told


def test_wrong_passphrases_wait_longer_each_time():
    now = [0.0]
    a = key.Attempts(clock=lambda: now[0])
    assert a.wait_s() == 0
    waits = []
    for _ in range(8):
        a.failed()
        waits.append(a.wait_s())
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]
    a.succeeded()
    assert a.wait_s() == 0


# -- reading a hand-in from the lesson -------------------------------------------------------------
@pytest.fixture(scope="module")
def lesson():
    from kvviz.lesson import Lesson

    return Lesson({"reserve": [b"12"], "free_r2": [b"1"], "sharing": [b"1"]})


def test_a_hand_in_holds_the_answer_checks_link_and_cards_of_the_session(lesson, hostile):
    from kvviz.handin.collect import collect
    from kvviz.nodes import LIVE

    explain = lesson.states["explain"]
    explain.answer = f"Paging is virtual memory. {hostile}"
    explain.check("gap_after_free", str(explain.engine_answer("gap_after_free")))
    explain.check("empty_other_reserve", "999")
    h = collect(lesson.states, sid(1), "Ada", lesson.describe)
    assert h.answer == explain.answer
    assert [(c.key, c.right) for c in h.checks] == [("gap_after_free", True), ("empty_other_reserve", False)]
    assert h.checks[1].question == explain.question("empty_other_reserve") and h.checks[1].typed == "999"
    assert h.checks[1].outcome == str(explain.engine_answer("empty_other_reserve"))
    assert h.query == lesson.query() == "?reserve=12&free_r2=1&sharing=1"
    assert set(h.metrics) == {n.key for n in LIVE}
    radix = lesson.states["radix"].snapshot.metrics
    assert h.metrics["radix"]["SAVED"] == f"{round(100 * radix.saved)}%"
    assert h.metrics["fragmentation"]["step"] == str(lesson.states["fragmentation"].step_count)
    assert h.predictions == ()


def test_predictions_are_read_wherever_they_are_once_each(lesson):
    from kvviz.handin.collect import collect
    from kvviz.state.predict import ResolvedPrediction

    p = ResolvedPrediction(node="paging", question="Will the naive pool refuse?", predicted="yes",
                           outcome="it did", right=True)
    lesson.states["explain"].predictions = [p, "junk"]
    lesson.states["paging"].predictions = [p, dataclasses.replace(p, question="Another?", right=False)]
    h = collect(lesson.states, sid(1), "Ada", lesson.describe)
    assert [(x.question, x.right) for x in h.predictions] == [("Will the naive pool refuse?", True),
                                                                   ("Another?", False)]


# -- the summary, the CSV, the HTML ----------------------------------------------------------------
def _class() -> list[HandIn]:
    def check(typed, right):
        return {"key": "gap", "question": "Longest gap?", "typed": typed, "feedback": "", "right": right}

    pred = {"node": "radix", "question": "Saved?", "predicted": "50%", "outcome": "50%", "right": True}
    return [HandIn.make(sid(1), "A", "x", checks=[check("8", True)], predictions=[pred]),
            HandIn.make(sid(2), "B", "", checks=[check("16", False)], predictions=[{**pred, "right": False}]),
            HandIn.make(sid(3), "C", "y", checks=[check(" 16 ", False)]),
            HandIn.make(sid(4), "D", "z", checks=[check("4", False)])]


def test_the_summary_counts_answers_rights_and_the_most_common_wrong_answers():
    answer, gap, saved = report.summarise(_class(), "Q")
    assert (answer.kind, answer.question, answer.answered) == ("answer", "Q", 3)
    assert (gap.answered, gap.right, gap.judged, gap.wrong) == (4, 1, 4, [("16", 2), ("4", 1)])
    assert (saved.kind, saved.node, saved.answered, saved.right, saved.judged) == (
        "prediction", "radix", 2, 1, 2)
    assert report.summarise([], "Q")[0].answered == 0


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", "=HYPERLINK(\"http://x\")"])
def test_csv_cells_a_spreadsheet_would_run_are_escaped(text):
    h = HandIn.make(sid(1), text.strip() or "x", text)
    rows = list(csv.reader(io.StringIO(report.to_csv([h], "http://host:5006/"))))
    assert rows[0][0] == "name" and len(rows) == 2
    row = dict(zip(rows[0], rows[1], strict=True))
    assert row["answer"].startswith("'") and row["answer"][1:].strip() == text.strip()
    assert row["name"].startswith("'") and row["state link"] == "http://host:5006/app"


def test_csv_keeps_hostile_text_as_text(hostile):
    h = HandIn.make(sid(1), hostile, f"{hostile}\nsecond line, \"quoted\"")
    row = list(csv.reader(io.StringIO(report.to_csv([h]))))[1]
    assert row[0] == hostile and row[4] == f"{hostile}\nsecond line, \"quoted\""


def test_teacher_html_escapes_every_student_field(hostile):
    evil = HandIn.make(sid(1), hostile, hostile,
                       checks=[{"key": hostile, "question": hostile, "typed": hostile,
                                                         "right": False}],
                       predictions=[{"node": hostile, "question": hostile, "predicted": hostile,
                                     "outcome": hostile}],
                       query="?reserve=12", metrics={hostile: {hostile: hostile}})
    page = (teacher_html.handins_html([evil], 1)
            + teacher_html.summary_html(report.summarise([evil], hostile), 1))
    page += teacher_html.header_html(1, 1, 1.0, hostile) + teacher_html.handins_html([], 1, hostile)
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert 'href="app?reserve=12"' in page and page.count("href=") == 1


# -- the views, driven in Python --------------------------------------------------------------------
def test_the_teacher_page_builds_nothing_of_the_class_until_the_passphrase(tmp_path, monkeypatch):
    from kvviz.handin import teacher_view

    monkeypatch.setenv(key.ENV, "open sesame")
    store = Store(tmp_path / "class.db")
    store.save(HandIn.make(sid(1), "Secret Student", "my answer"))
    page = teacher_view.TeacherPage(store=store)
    assert not page.unlock("open sesam") and not page.unlocked
    assert not hasattr(page, "listing") and "Secret" not in repr(page._layout)
    assert not page.unlock("open sesame")  # (still waiting after the wrong one)
    page.attempts.until = 0
    assert page.unlock("open sesame") and page.key.value == ""
    assert "Secret Student" in page.listing.object and "<b>1</b> hand-in" in page.count.object
    shown = [str(getattr(o, "object", "")) for o in page._layout.objects]
    # (unlocked only)
    assert any("make vllm" in o for o in shown) and "make vllm" not in teacher_view.TITLE_HTML
    store.save(HandIn.make(sid(2), "Late Student"))
    page.refresh()
    assert "Late Student" in page.listing.object
    page.search.value_input = "late"
    assert "Late Student" in page.listing.object and "Secret Student" not in page.listing.object
    page.ask_clear()
    store.save(HandIn.make(sid(3), "After the question"))
    page.clear()
    assert [h.name for h in store.handins()] == ["After the question"]
    assert teacher_view.POLL_MS <= 1000  # new hand-ins appear within 2 s (issue 12)


def test_the_csv_button_gives_nothing_to_a_locked_page(tmp_path, monkeypatch):
    from kvviz.handin import teacher_view

    monkeypatch.setenv(key.ENV, "open sesame")
    store = Store(tmp_path / "class.db")
    store.save(HandIn.make(sid(1), "Secret Student"))
    page = teacher_view.TeacherPage(store=store)
    assert page._csv().getvalue() == ""
    page.unlock("open sesame")
    assert "Secret Student" in page._csv().getvalue()


def test_the_student_box_hands_in_updates_and_is_rate_limited(lesson, tmp_path):
    from kvviz.handin.view import HandInView

    store = Store(tmp_path / "class.db")
    box = HandInView.around(lesson.states["explain"])
    box.store = store
    assert box.hand_in() is None and "name" in box.status.object
    box.name_box.value = "Ada"
    assert box.hand_in() is None and "student id" in box.status.object
    box.student.student_id = "f" * 31 + "X"  # (what a tampered browser might send)
    assert box.hand_in() is None and "student id" in box.status.object and store.count() == 0
    box.student.student_id = sid(5)
    first = box.hand_in()
    assert first.submissions == 1 and "Handed in at" in box.status.object
    assert box.hand_in() is None and "wait" in box.status.object
    box.limit.last -= 10
    assert box.hand_in().submissions == 2 and store.count() == 1
    again = HandInView.around(lesson.states["explain"])  # a reload: the same browser id
    again.store = store
    again.student.student_id = sid(5)
    assert again.name_box.value == "Ada" and "You handed in at" in again.status.object
