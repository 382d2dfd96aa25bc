"""A class over several machines, one store: what the teacher page reads is every hand-in made
through any backend of any machine. Two "machines" are two groups of processes, each reaching
the store its own way (on PostgreSQL, one over 127.0.0.1 and the other over 127.0.0.2, the
throwaway server listening on both; on SQLite, the same file, as the backends of one machine).
Each process hands in from several threads through one Store, as a backend does. Run on both
stores (the `class_db` fixture)."""

from __future__ import annotations

import csv
import io
import multiprocessing as mp
import os
import signal
import threading

import pytest
from postgres_support import via

from kvviz.handin.model import HandIn
from kvviz.handin.report import to_csv
from kvviz.handin.storage import Store
from kvviz.handin.teacher_html import card_html

CTX = mp.get_context("fork")  # (the children use only the storage: no torch after the fork)
PROCESSES, THREADS, EACH = 2, 6, 5  # per machine: 2 machines x 2 x 6 x 5 = 120 hand-ins


def sid(i: int) -> str:
    return f"{i:032x}"


def handin(i: int, machine: int, answer: str = "") -> HandIn:
    return HandIn.make(sid(i), f"student {i}", answer or f"answer {i} via machine {machine}",
                       query=f"?node=paging&reserve={i % 30 + 1}")


def _backend(target: str, machine: int, first: int, barrier) -> None:
    """One backend process: THREADS threads, each handing in EACH students, through one Store."""
    store = Store(target)
    errors: list[BaseException] = []

    def students(start: int) -> None:
        try:
            for i in range(start, start + EACH):
                store.save(handin(i, machine))
        except BaseException as e:  # (reported by the exit code below)
            errors.append(e)

    barrier.wait(timeout=60)
    threads = [threading.Thread(target=students, args=(first + t * EACH,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_120_hand_ins_through_two_machines_at_once_all_reach_one_teacher_page_once(class_db):
    per_proc = THREADS * EACH
    barrier = CTX.Barrier(2 * PROCESSES)
    procs = [CTX.Process(target=_backend, args=(via(class_db, m), m, (m * PROCESSES + p) * per_proc, barrier))
             for m in (0, 1) for p in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert [p.exitcode for p in procs] == [0] * len(procs)

    teacher = Store(via(class_db, 0))  # the front machine's teacher page
    got = teacher.handins()
    assert sorted(h.student_id for h in got) == [sid(i) for i in range(120)]  # none lost, none doubled
    machine = {i: i // (PROCESSES * per_proc) for i in range(120)}
    assert all(h.answer == f"answer {int(h.student_id, 16)} via machine {machine[int(h.student_id, 16)]}"
               and h.submissions == 1 for h in got)
    assert teacher.revision() == 120

    # Machine 1 is gone: its students are sent to machine 0 and hand in again from their link.
    moved = [i for i in range(120) if machine[i] == 1]
    for i in moved:
        teacher.save(handin(i, 0, answer="again, after the move"))
    after = {h.student_id: h for h in Store(via(class_db, 1)).handins()}
    assert len(after) == 120 and teacher.revision() == 180
    assert all(after[sid(i)].submissions == 2 and after[sid(i)].answer == "again, after the move"
               for i in moved)
    assert after[sid(moved[0])].link() == f"app?node=paging&reserve={moved[0] % 30 + 1}"


def _until_killed(target: str, machine: int, first: int, confirmed) -> None:
    """A backend that hands in one student after another and says which are stored, until killed."""
    store = Store(target)
    for i in range(first, first + 10_000):
        store.save(handin(i, machine))
        confirmed.send(i)  # (a pipe: sent before the next hand-in starts)


def _fixed(target: str, machine: int, first: int, count: int) -> None:
    store = Store(target)
    for i in range(first, first + count):
        store.save(handin(i, machine))


def test_a_backend_machine_killed_mid_class_loses_no_confirmed_hand_in(class_db):
    receive, send = CTX.Pipe(duplex=False)
    doomed = CTX.Process(target=_until_killed, args=(via(class_db, 1), 1, 50_000, send))
    survivor = CTX.Process(target=_fixed, args=(via(class_db, 0), 0, 0, 60))
    doomed.start()
    survivor.start()
    send.close()
    confirmed = [receive.recv() for _ in range(20)]
    os.kill(doomed.pid, signal.SIGKILL)  # somewhere in a hand-in: before, inside or after its transaction
    doomed.join(30)
    while True:  # what it confirmed before it died
        try:
            confirmed.append(receive.recv())
        except EOFError:
            break
    survivor.join(120)
    assert doomed.exitcode == -signal.SIGKILL and survivor.exitcode == 0

    store = Store(via(class_db, 0))
    got = {h.student_id: h for h in store.handins()}  # (every row reads back whole)
    assert {sid(i) for i in confirmed} <= set(got)  # every confirmed hand-in of the dead machine
    assert {sid(i) for i in range(60)} <= set(got)  # and the other machine went on
    assert len(got) == store.count() == store.revision()  # no half-done write: one revision per hand-in
    assert len(got) - 60 - len(confirmed) in (0, 1)  # at most the one stored as it was killed, unconfirmed
    back = Store(via(class_db, 0)).get(sid(confirmed[0]))  # its student, now on the other machine
    assert back.link() == f"app?node=paging&reserve={confirmed[0] % 30 + 1}"


FORMULA = "=cmd|' /C calc'!A0"
INJECTION = "Robert'); DROP TABLE handins; --"


@pytest.mark.parametrize("machine", [0, 1])
def test_hostile_text_is_stored_as_text_and_shown_inert(class_db, hostile, machine):
    store = Store(via(class_db, machine))
    h = HandIn.make(sid(1), hostile, f"{FORMULA}\n{INJECTION}",
                    checks=[{"key": "k", "question": hostile, "typed": FORMULA, "right": False}],
                    predictions=[{"node": "radix", "question": INJECTION, "predicted": FORMULA,
                                  "right": True}],
                    metrics={"radix": {hostile: FORMULA}})
    store.save(h)
    store.save(HandIn.make(sid(2), INJECTION, FORMULA))
    got = Store(via(class_db, 1 - machine)).get(sid(1))
    assert (got.name, got.answer, got.checks, got.predictions, got.metrics) == (
        h.name, h.answer, h.checks, h.predictions, h.metrics)
    assert store.count() == 2 and store.get(sid(2)).name == INJECTION  # the table is still there
    page = card_html(got)
    assert hostile not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    rows = list(csv.reader(io.StringIO(to_csv(store.handins()))))
    assert not [c for row in rows for c in row if c.startswith(("=", "+", "-", "@"))]  # no cell a formula
    assert {row[4] for row in rows[1:]} == {f"'{FORMULA}\n{INJECTION}", f"'{FORMULA}"}  # the answers, escaped


def _same_students(target: str, machine: int, rounds: int, barrier) -> None:
    store = Store(target)
    barrier.wait(timeout=60)
    for r in range(rounds):
        store.save(handin(r % 5, machine, answer=f"machine {machine} round {r}"))


def test_the_same_students_handing_in_through_both_machines_at_once_lose_no_update(class_db):
    barrier = CTX.Barrier(4)
    procs = [CTX.Process(target=_same_students, args=(via(class_db, m), m, 30, barrier))
             for m in (0, 1, 0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert [p.exitcode for p in procs] == [0] * 4
    store = Store(class_db)
    got = store.handins()
    assert sorted(h.student_id for h in got) == [sid(i) for i in range(5)]
    assert sum(h.submissions for h in got) == 120 and store.revision() == 120  # every write counted once
