"""A hand-in never loses anything (issue 28, items 4 and 9): a student's later hand-in merges with
their earlier ones (`model.merge`, under the store's write lock), the newest answer to each
question winning, and the class pulse counts each student's latest answer per question.

The sequence that lost a hand-in: predict on the recorded page `/` and hand in there (one request,
kvviz/handin/endpoint.py), then follow the page's "Open Explain it back" link to the live `/app`
(a new Panel session, whose hand-in holds the self-checks and the answer but none of `/`'s
predictions) and hand in again. Storage tests run on SQLite and PostgreSQL (the `class_db`
fixture); the merge's own rules are properties over random sequences of hand-ins."""

from __future__ import annotations

import functools
import json
import multiprocessing as mp
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_support import via

from kvviz.handin import endpoint, key, model
from kvviz.handin.model import MAX_ANSWER, MAX_ITEMS, HandIn, HandInCheck, HandInPrediction, merge
from kvviz.handin.pulse import pulse
from kvviz.handin.storage import Store

CTX = mp.get_context("fork")  # (the children use only the storage: no torch after the fork)
ID = "5a" * 16


def sid(i: int) -> str:
    return f"{i:032x}"


@pytest.fixture
def db(class_db, monkeypatch):
    """The class database, also where the one-request endpoint (the recorded page's) stores."""
    monkeypatch.setenv("KVVIZ_DB", class_db)
    endpoint._LIMITS.clear()
    yield Store(class_db)
    endpoint._LIMITS.clear()


def from_the_recorded_page(predictions: list[dict], name: str = "Ada", query: str = "?free_r2=1") -> dict:
    """What `/` sends (kvviz/export/player_handin.js's handIn): the name, every prediction resolved on the
    page as the player holds it (the engine's arithmetic and its own flag besides), the link."""
    endpoint._LIMITS.clear()  # (a later hand-in, past the rate limit's 3 s)
    status, answer = endpoint.hand_in(json.dumps({
        "student_id": ID, "name": name, "query": query,
        "predictions": [{**p, "why": "the engine's arithmetic", "recorded": True}
                        for p in predictions]}).encode())
    assert status == 200 and answer["ok"], answer
    return answer


def by_question(h: HandIn) -> dict:
    return {(p.node, p.question): p.predicted for p in h.predictions}


def pulses(store: Store) -> dict:
    return {(p.kind, p.node): (p.students, [(b.value, b.count) for b in p.bars])
            for p in pulse(store.handins())}


# -- the sequence of issue 28, item 9 --------------------------------------------------------------
def test_predict_on_the_recorded_page_then_explain_it_back_live_keeps_both(db, monkeypatch):
    from kvviz.handin import teacher_view
    from kvviz.lesson import Lesson

    played = Lesson({})  # the state `/` showed: its prediction resolved from the recording
    frag = played.states["fragmentation"]
    frag.predict("admitted")
    frag.free_r2()
    (resolved,) = frag.predictions
    first = from_the_recorded_page([resolved.to_json()])
    assert "hand-in" not in first["message"]  # (the first: nothing said about earlier ones)
    question = ("fragmentation", resolved.question)
    assert by_question(db.get(ID)) == {question: "admitted"}

    live = Lesson({})  # /app, opened from the page's link: a new session, none of `/`'s predictions
    live.handin.store = db
    live.handin.identify(ID)  # the same browser's id (its localStorage)
    assert live.handin.display_name == "Ada" and "You handed in at" in live.handin.status
    explain = live.states["explain"]
    assert explain.check("gap_after_free", "8")
    explain.answer = "A slab is reserved whole, so freeing one leaves a hole only as long as it."
    second = live.handin.hand_in()
    assert second is not None and "hand-in 2: added to what you handed in before" in live.handin.status

    stored = db.get(ID)
    assert stored == second and stored.submissions == 2 and stored.query == live.describe(live.states)[0]
    assert by_question(stored) == {question: "admitted"}  # the recorded page's prediction is still there
    assert [(c.key, c.typed, c.right) for c in stored.checks] == [("gap_after_free", "8", True)]
    assert stored.answer == explain.answer
    assert pulses(db) == {("prediction", "fragmentation"): (1, [("admitted", 1)]),
                          ("check", "gap_after_free"): (1, [("8", 1)])}

    monkeypatch.setenv(key.ENV, "open sesame")
    teacher = teacher_view.TeacherPage(store=db)
    assert teacher.unlock("open sesame")
    assert "No predictions" not in teacher.pulse.object
    assert "1 predicted admitted (the engine&#x27;s answer is hidden)" in teacher.pulse.object

    # Back on `/`, the student changes their mind and hands in again: the newest answer wins,
    # counted once; the answer and the self-check handed in live stay.
    from_the_recorded_page([{**resolved.to_json(), "predicted": "refused", "right": True}])
    stored = db.get(ID)
    assert by_question(stored) == {question: "refused"} and stored.submissions == 3
    assert stored.answer == explain.answer and len(stored.checks) == 1
    assert pulses(db)[("prediction", "fragmentation")] == (1, [("refused", 1)])
    teacher.refresh()  # (what the page's poll does)
    assert "1 predicted refused (the engine&#x27;s answer is hidden)" in teacher.pulse.object

    # Live again with the answer box emptied: the written answer handed in before is not erased.
    explain.answer = ""
    live.handin.limit.last -= 10
    assert live.handin.hand_in() is not None
    stored = db.get(ID)
    assert (stored.answer.startswith("A slab is reserved whole")
            and by_question(stored) == {question: "refused"})
    assert stored.submissions == 4 and len(stored.checks) == 1


def test_the_endpoint_takes_an_answer_and_self_checks_and_merges_them(db):
    status, _ = endpoint.hand_in(json.dumps({
        "student_id": ID, "name": "Ada", "answer": "It pages.",
        "checks": [{"key": "gap_after_free", "question": "Gap?", "typed": "8", "outcome": "8", "right": True},
                   "not an object"]}).encode())
    assert status == 200
    from_the_recorded_page([{"node": "radix", "question": "How many?", "predicted": "9", "outcome": "18",
                             "right": False}])
    stored = db.get(ID)
    assert (stored.answer, [c.key for c in stored.checks], by_question(stored)) == (
        "It pages.", ["gap_after_free"], {("radix", "How many?"): "9"})
    endpoint._LIMITS.clear()
    status, _ = endpoint.hand_in(json.dumps({"student_id": ID, "name": "Ada",
                                             "checks": "not a list"}).encode())
    assert status == 200 and [c.key for c in db.get(ID).checks] == ["gap_after_free"]  # (read as none: kept)


# -- merging in the store --------------------------------------------------------------------------
def pred(node: str, question: str, predicted: str, right: bool | None = None) -> dict:
    return {"node": node, "question": question, "predicted": predicted, "outcome": "18", "right": right}


def check(key_: str, typed: str, question: str = "") -> dict:
    return {"key": key_, "question": question or f"{key_}?", "typed": typed, "outcome": "8",
            "right": typed == "8"}


def test_a_later_hand_in_merges_question_by_question_and_erases_nothing(class_db):
    store = Store(class_db)
    store.save(HandIn.make(sid(1), "Ada", "my answer", checks=[check("gap", "3"), check("empty", "4")],
                           predictions=[pred("radix", "q1?", "9"), pred("paging", "q2?", "more")],
                           query="?reserve=8",
                           metrics={"radix": {"SAVED": "50%"}, "paging": {"IN USE": "8"}}), now=100.0)
    again = store.save(HandIn.make(sid(1), "Ada L.", "", checks=[check("gap", "8"), check("adds", "")],
                                   predictions=[pred("radix", "q1?", "18", True), pred("radix", "q3?", "")],
                                   metrics={"radix": {"SAVED": "67%"}}), now=160.0)
    assert (again.created_at, again.updated_at, again.submissions) == (100.0, 160.0, 2)
    # the link: where they last were
    assert (again.name, again.answer, again.query) == ("Ada L.", "my answer", "")
    # (nothing said: left out)
    assert [(c.key, c.typed) for c in again.checks] == [("empty", "4"), ("gap", "8")]
    assert [(p.node, p.question, p.predicted, p.right) for p in again.predictions] == [
        ("paging", "q2?", "more", None), ("radix", "q1?", "18", True)]
    assert again.metrics == {"radix": {"SAVED": "67%"}, "paging": {"IN USE": "8"}}
    assert store.get(sid(1)) == again and store.count() == 1

    # An item with nothing said replaces nothing; a question answered later is added.
    third = store.save(HandIn.make(sid(1), "Ada L.", checks=[check("empty", ""), check("adds", "2")],
                                   predictions=[pred("paging", "q2?", ""), pred("radix", "q3?", "12")]))
    assert [(c.key, c.typed) for c in third.checks] == [("empty", "4"), ("gap", "8"), ("adds", "2")]
    assert by_question(third) == {("paging", "q2?"): "more", ("radix", "q1?"): "18", ("radix", "q3?"): "12"}
    assert third.answer == "my answer" and third.submissions == 3


def test_one_hand_in_holds_one_item_per_question_the_last_one_given(class_db):
    store = Store(class_db)
    got = store.save(HandIn.make(sid(1), "Ada",
                                 predictions=[pred("radix", "q?", "9"), pred("radix", "q?", "18"),
                                                             pred("radix", "other?", "3")]))
    assert [(p.question, p.predicted) for p in got.predictions] == [("q?", "18"), ("other?", "3")]


def test_the_merged_lists_keep_their_caps_keeping_the_newest(class_db):
    store = Store(class_db)
    store.save(HandIn.make(sid(1), "Ada", "x" * MAX_ANSWER,
                           checks=[check(f"c{i}", str(i)) for i in range(MAX_ITEMS)],
                           predictions=[pred("radix", f"q{i}?", str(i)) for i in range(MAX_ITEMS)]))
    got = store.save(HandIn.make(sid(1), "Ada", "y" * MAX_ANSWER,
                                 checks=[check("c0", "again"), *(check(f"new{i}", "1") for i in range(5))],
                                 predictions=[pred("radix", "q0?", "again"),
                                              *(pred("paging", f"new{i}?", "1") for i in range(5))]))
    expected = [f"q{i}?" for i in range(6, MAX_ITEMS)] + ["q0?"] + [f"new{i}?" for i in range(5)]
    assert [p.question for p in got.predictions] == expected and len(got.predictions) == MAX_ITEMS
    assert got.predictions[-6].predicted == "again"  # re-answered: now among the newest, kept
    assert ([c.key for c in got.checks] == [f"c{i}" for i in range(6, MAX_ITEMS)] + ["c0"]
            + [f"new{i}" for i in range(5)])
    assert got.answer == "y" * MAX_ANSWER  # the newer answer, not both
    assert store.get(sid(1)) == got  # (read back whole: nothing past a cap was written)

    everything_new = store.save(HandIn.make(sid(1), "Ada", predictions=[pred("vllm", f"v{i}?", "2")
                                                                        for i in range(MAX_ITEMS)]))
    assert [p.question for p in everything_new.predictions] == [f"v{i}?" for i in range(MAX_ITEMS)]


def test_metrics_that_together_would_be_too_big_are_the_newers(class_db):
    store = Store(class_db)
    big = {f"node{i}": {f"label{j}": "v" * 80 for j in range(7)} for i in range(8)}
    more = {f"more{i}": {f"label{j}": "w" * 80 for j in range(7)} for i in range(8)}
    assert len(model.compact(big)) <= model.MAX_METRICS < len(model.compact({**big, **more}))
    store.save(HandIn.make(sid(1), "Ada", metrics=big))
    assert store.save(HandIn.make(sid(1), "Ada", metrics=more)).metrics == more
    assert store.save(HandIn.make(sid(1), "Ada")).metrics == more  # none given: the earlier kept


def test_a_full_class_still_merges_a_known_students_hand_in(class_db, monkeypatch):
    from kvviz.handin import storage

    monkeypatch.setattr(storage, "MAX_HANDINS", 1)
    store = Store(class_db)
    store.save(HandIn.make(sid(1), "Ada", predictions=[pred("radix", "q?", "9")]))
    got = store.save(HandIn.make(sid(1), "Ada", "an answer"))
    assert got.answer == "an answer" and by_question(got) == {("radix", "q?"): "9"}


def test_the_pulse_counts_each_students_latest_answer_once(class_db):
    store = Store(class_db)
    for i, said in enumerate(["9", "18", "18"]):
        store.save(HandIn.make(sid(i), f"s{i}", predictions=[pred("radix", "q?", said)]))
    store.save(HandIn.make(sid(0), "s0", "an answer only"))  # nothing predicted: the 9 still counts
    assert pulses(store)[("prediction", "radix")] == (3, [("9", 1), ("18", 2)])
    store.save(HandIn.make(sid(0), "s0", predictions=[pred("radix", "q?", "18")]))  # changed: counted once
    store.save(HandIn.make(sid(1), "s1", predictions=[pred("radix", "q?", "")]))  # nothing said: the 18 stays
    assert pulses(store)[("prediction", "radix")] == (3, [("18", 3)])


# -- many processes and machines at once ------------------------------------------------------------
STUDENTS, ROUNDS = 3, 8


def _own_question(target: str, writer: int, barrier) -> None:
    """One backend handing in, for every student, the answer to its own question, round after round
    (writer 0 also the written answer; the others none)."""
    store = Store(target)
    barrier.wait(timeout=60)
    for r in range(ROUNDS):
        for s in range(STUDENTS):
            store.save(HandIn.make(sid(s), f"student {s}", f"round {r}" if writer == 0 else "",
                                   predictions=[pred("radix", f"asked through backend {writer}?", str(r))]))


def test_the_same_students_handing_in_different_questions_through_two_machines_at_once_lose_none(class_db):
    barrier = CTX.Barrier(4)
    procs = [CTX.Process(target=_own_question, args=(via(class_db, w % 2), w, barrier)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert [p.exitcode for p in procs] == [0] * 4
    store = Store(class_db)
    got = store.handins()
    assert sorted(h.student_id for h in got) == [sid(s) for s in range(STUDENTS)]
    last = str(ROUNDS - 1)
    for h in got:  # every backend's question, each with its last round's answer: no update lost
        assert by_question(h) == {("radix", f"asked through backend {w}?"): last for w in range(4)}
        assert h.answer == f"round {last}" and h.submissions == 4 * ROUNDS
    assert store.revision() == 4 * ROUNDS * STUDENTS


# -- the merge's rules, over random sequences of hand-ins ------------------------------------------
CAP = 4  # (MAX_ITEMS for these properties, so that the cap is reached often)
NODES, QUESTIONS, SAID = ("fragmentation", "radix"), ("q1?", "q2?", "q3?"), ("", "8", "12", "admitted")

predictions = st.builds(lambda n, q, s: HandInPrediction(n, q, s, "8", (s == "8") if s else None),
                        st.sampled_from(NODES), st.sampled_from(QUESTIONS), st.sampled_from(SAID))
checks = st.builds(lambda k, s: HandInCheck(k, f"{k}?", s, "8", "", (s == "8") if s else None),
                   st.sampled_from(("gap", "empty", "adds")), st.sampled_from(SAID))
handins = st.builds(
    lambda name, answer, p, c, query, metrics: HandIn(ID, name, answer, tuple(c), tuple(p), query, metrics),
    st.sampled_from(("Ada", "Ada L.")), st.sampled_from(("", "first answer", "second answer")),
    st.lists(predictions, max_size=CAP), st.lists(checks, max_size=CAP), st.sampled_from(("", "?free_r2=1")),
    st.dictionaries(st.sampled_from(NODES), st.just({"SAVED": "50%"}), max_size=2))


def expected_items(sequence: list[HandIn], which: str, key_, said) -> list:
    """Stated another way: each question's newest answered item, the CAP whose answer came last."""
    kept = {key_(item): (position, item)
            for position, item in enumerate(i for h in sequence for i in getattr(h, which)) if said(item)}
    return [item for _position, item in sorted(kept.values(), key=lambda pi: pi[0])][-CAP:]


def expected(sequence: list[HandIn]) -> HandIn:
    return HandIn(ID, sequence[-1].name, next((h.answer for h in reversed(sequence) if h.answer), ""),
                  checks=tuple(expected_items(sequence, "checks", model.check_key, lambda c: c.typed)),
                  predictions=tuple(expected_items(sequence, "predictions", model.prediction_key,
                                                   lambda p: p.predicted)),
                  query=sequence[-1].query,
                  metrics=functools.reduce(lambda m, h: {**m, **h.metrics}, sequence, {}))


@given(st.lists(handins, min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_any_sequence_ends_with_the_newest_answer_to_each_question(sequence):
    with mock.patch.object(model, "MAX_ITEMS", CAP):
        folded = functools.reduce(merge, sequence[1:], merge(HandIn(ID, sequence[0].name), sequence[0]))
        assert folded == expected(sequence)
        assert len(folded.predictions) <= CAP and len(folded.checks) <= CAP


@given(handins, handins, handins)
@settings(max_examples=300, deadline=None)
def test_merging_is_associative(a, b, c):
    with mock.patch.object(model, "MAX_ITEMS", CAP):
        assert merge(merge(a, b), c) == merge(a, merge(b, c))


@given(st.lists(handins, min_size=1, max_size=5))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_store_and_the_pulse_end_with_the_newest_answer_to_each_question(sequence):
    with mock.patch.object(model, "MAX_ITEMS", CAP), tempfile.TemporaryDirectory() as where:
        store = Store(Path(where) / "class.db")
        for h in sequence:
            store.save(h)
        want = expected(sequence)
        got = store.get(ID)
        assert (got.checks, got.predictions, got.answer, got.name) == (
            want.checks, want.predictions, want.answer, want.name)
        assert got.submissions == len(sequence)
        counted = {(p.kind, p.node, p.question): [(b.value, b.count) for b in p.bars] for p in pulse([got])}
        assert counted == {**{("prediction", p.node, p.question): [(p.predicted, 1)]
                              for p in want.predictions if p.predicted},
                           **{("check", c.key, c.question): [(c.typed, 1)] for c in want.checks if c.typed}}
        store.close()
