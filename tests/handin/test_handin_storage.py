"""The hand-ins' storage (kvviz/handin/storage.py; a hand-in as data: test_handin_model.py): one
database shared by many processes, a SQLite file or PostgreSQL (a throwaway cluster,
tests/postgres_support.py); every storage test runs on both (the `class_db` fixture: a file path or
a postgresql:// URL).
Concurrent writers from several processes, persistence across a killed writer, and bad input.
The storage only: no server, no Panel."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
import sqlite3
import stat

import pytest
import sqlalchemy as sa

from kvviz.handin import model, schema, storage
from kvviz.handin.database import make_engine
from kvviz.handin.model import (
    MAX_NAME,
    HandIn,
    HandInCheck,
    HandInPrediction,
)
from kvviz.handin.storage import Store, StoreError, StoreFull

CTX = mp.get_context("fork")  # (the children use only the storage: no torch after the fork)


def sid(i: int) -> str:
    return f"{i:032x}"


def handin(i: int, name: str | None = None, **fields) -> HandIn:
    return HandIn.make(sid(i), name or f"student {i}", **{"answer": f"answer {i}", **fields})


# -- one process ----------------------------------------------------------------------------------
def test_save_then_save_again_updates_the_same_hand_in(class_db):
    store = Store(class_db)
    first = store.save(handin(1, answer="first"), now=100.0)
    assert (first.created_at, first.updated_at, first.submissions) == (100.0, 100.0, 1)
    again = store.save(handin(1, name="Ada", answer="second"), now=160.0)
    assert (again.created_at, again.updated_at, again.submissions) == (100.0, 160.0, 2)
    assert [(h.name, h.answer, h.submissions) for h in store.handins()] == [("Ada", "second", 2)]
    assert store.get(sid(1)) == again and store.get(sid(2)) is None


def test_every_field_round_trips(class_db):
    store = Store(class_db)
    h = HandIn.make(sid(7), "Ada", "line one\nline two", checks=[{"key": "k", "question": "q?", "typed": "3",
                                                                   "feedback": "Right", "right": True}],
                    predictions=[{"node": "paging", "question": "p?", "predicted": "more", "outcome": "fewer",
                                  "right": False}],
                    query="?reserve=12&add=Pages+fit%21",
                    metrics={"fragmentation": {"IN USE": "8 / 32 · 25%"}})
    stored = store.save(h)
    got = Store(class_db).get(sid(7))  # (a second store: another connection)
    assert got == stored and got.checks == h.checks and got.predictions == h.predictions
    assert got.link() == "app?reserve=12&add=Pages+fit%21"


def test_revision_counts_every_write_and_clear_keeps_later_hand_ins(class_db):
    store = Store(class_db)
    assert store.revision() == 0
    store.save(handin(1))
    store.save(handin(2))
    seen = store.revision()
    assert seen == 2
    store.save(handin(3))  # handed in after the teacher was asked to confirm
    assert store.clear(up_to=seen) == 2
    assert [h.student_id for h in store.handins()] == [sid(3)] and store.revision() == 4
    assert store.clear() == 1 and store.count() == 0


def test_reading_an_empty_database_finds_nothing(class_db):
    store = Store(class_db)
    assert (store.revision(), store.handins(), store.get(sid(1)), store.count(), store.clear()) == (
        0, [], None, 0, 0)


def test_reading_a_missing_database_finds_nothing_and_creates_nothing(tmp_path):
    store = Store(tmp_path / "nothing-yet.db")
    assert (store.revision(), store.handins(), store.get(sid(1)), store.count(), store.clear()) == (
        0, [], None, 0, 0)
    assert list(tmp_path.iterdir()) == []


def test_the_file_is_created_on_first_write_readable_by_its_owner_only_in_wal_mode(tmp_path):
    store = Store(tmp_path / "class.db")
    store.save(handin(1))
    assert stat.S_IMODE((tmp_path / "class.db").stat().st_mode) == 0o600
    with sqlite3.connect(tmp_path / "class.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_path_comes_from_the_environment_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert storage.db_path({}) == tmp_path / "kvviz-class.db"
    assert storage.db_path({"KVVIZ_DB": "sub/x.db"}) == tmp_path / "sub" / "x.db"
    with pytest.raises(StoreError, match="no directory"):
        Store(tmp_path / "sub" / "x.db").save(handin(1))
    url = "postgresql://kvviz:secret@10.0.0.5:5432/class"
    assert storage.db_path({"KVVIZ_DB": f"  {url} "}) == url
    assert Store(url).where == "postgresql://kvviz:***@10.0.0.5:5432/class" and Store(url).path is None


def test_a_full_class_refuses_new_students_but_updates_known_ones(class_db, monkeypatch):
    monkeypatch.setattr(storage, "MAX_HANDINS", 2)
    store = Store(class_db)
    store.save(handin(1))
    store.save(handin(2))
    with pytest.raises(StoreFull):
        store.save(handin(3))
    assert store.save(handin(1, answer="changed")).submissions == 2
    assert store.count() == 2


# -- bad input ------------------------------------------------------------------------------------
def test_the_storage_refuses_a_hand_in_that_make_would_not_produce(class_db, hostile):
    store = Store(class_db)
    for bad in (HandIn(sid(1), "x" * (MAX_NAME + 1)), HandIn(sid(1), "Ada", query="javascript:x"),
                HandIn("not-an-id", "Ada"), HandIn(sid(1), "Ada\x00"), HandIn(sid(1), ""),
                HandIn(sid(1), "Ada", checks=({"question": hostile},))):
        with pytest.raises(ValueError):
            store.save(bad)
    with pytest.raises(ValueError):
        store.save({"student_id": sid(1), "name": "Ada"})
    assert store.count() == 0


# -- a self-check and a prediction as handed in -----------------------------------------------------
def test_the_storage_refuses_an_item_that_from_json_would_not_produce(class_db):
    store = Store(class_db)
    unclean = HandInPrediction(node="radix", question="q\x00?", predicted="9", outcome="18", right=True)
    with pytest.raises(ValueError, match="not clean text within its limit"):
        store.save(HandIn(sid(1), "Ada", predictions=(unclean,)))
    too_long = HandInCheck(key="k", question="q" * (model.MAX_SHORT + 1), right=True)
    with pytest.raises(ValueError, match="not clean text within its limit"):
        store.save(HandIn(sid(1), "Ada", checks=(too_long,)))
    assert store.count() == 0


def test_a_hand_in_stored_in_the_old_format_still_loads(class_db):
    """Rows written before the items were dataclasses: the same JSON (plain dicts), and items of an
    older hand-in missing the fields added later (a check's key, outcome, feedback)."""
    store = Store(class_db)
    store.save(handin(1))  # (the tables)
    checks = [{"key": "gap", "question": "Longest gap?", "typed": "8", "outcome": "8", "feedback": "Right",
               "right": True},
              {"question": "Older?", "typed": "3", "right": False}]
    predictions = [{"node": "paging", "question": "p?", "predicted": "more", "outcome": "fewer",
                    "right": False},
                   {"node": "radix", "question": "q?", "predicted": "9", "outcome": "18", "right": None}]
    engine = make_engine(class_db)
    with engine.begin() as c:
        c.execute(sa.update(schema.handins).where(schema.handins.c.student_id == sid(1)).values(
            checks=model.compact(checks), predictions=model.compact(predictions)))
    engine.dispose()
    got = store.get(sid(1))
    assert got.checks == (HandInCheck("gap", "Longest gap?", "8", "8", "Right", True),
                          HandInCheck("", "Older?", "3", "", "", False))
    assert got.predictions == (HandInPrediction("paging", "p?", "more", "fewer", False),
                               HandInPrediction("radix", "q?", "9", "18", None))
    assert got.score("checks") == (1, 2) and got.score("predictions") == (0, 1)
    assert ([c.to_json() for c in got.checks[:1]] + [p.to_json() for p in got.predictions] == checks[:1]
            + predictions)
    again = store.save(got)  # and it saves again as it was (the stored JSON unchanged for a full item)
    with make_engine(class_db).connect() as c:
        row = c.execute(sa.select(schema.handins.c.predictions)
                        .where(schema.handins.c.student_id == sid(1))).one()
    assert row[0] == model.compact(predictions) and again.submissions == 2


@pytest.mark.parametrize("class_db", ["postgresql"], indirect=True)
def test_a_backend_that_finds_the_tables_made_does_not_wait_for_the_schema_lock(class_db):
    """While another backend holds the schema lock (making tables), one that starts now and finds
    them made writes at once (before, it waited for the lock: forty backends starting together held
    it one after another, and under load the last ones waited past `lock_timeout`)."""
    Store(class_db).save(handin(1))  # (the tables made)
    engine = make_engine(class_db)
    try:
        with engine.connect() as c, c.begin():
            c.execute(sa.select(sa.func.pg_advisory_xact_lock(schema.SCHEMA_LOCK)))  # (held until the end)
            late = Store(class_db)
            late.save(handin(2))
            assert late.count() == 2
    finally:
        engine.dispose()


# -- many processes -------------------------------------------------------------------------------
def _one_at_the_barrier(path: str, i: int, barrier, done) -> None:
    barrier.wait(timeout=60)
    Store(path).save(handin(i, answer=f"answer of student {i}"))
    done.put(i)


def test_forty_students_handing_in_at_the_same_moment_from_forty_processes_lose_nothing(class_db):
    path = class_db
    barrier, done = CTX.Barrier(40), CTX.Queue()
    procs = [CTX.Process(target=_one_at_the_barrier, args=(path, i, barrier, done)) for i in range(40)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 40
    got = Store(path).handins()
    assert sorted(h.student_id for h in got) == [sid(i) for i in range(40)]
    assert all(h.answer == f"answer of student {int(h.student_id, 16)}" and h.submissions == 1 for h in got)
    assert Store(path).revision() == 40


def _writer(path: str, w: int, rounds: int) -> None:
    store = Store(path)
    for r in range(rounds):
        store.save(handin(w * 100 + r % 5, answer=f"w{w} r{r}"))  # five students, each updated in turn
        assert store.revision() >= 1 and store.count() >= 1  # reads interleaved with the others' writes


def test_writers_in_several_processes_interleave_without_losing_an_update(class_db):
    path = class_db
    procs = [CTX.Process(target=_writer, args=(path, w, 30)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 4
    store = Store(path)
    got = {h.student_id: h for h in store.handins()}
    assert len(got) == 20 and sum(h.submissions for h in got.values()) == 120
    assert store.revision() == 120
    assert got[sid(302)].answer == "w3 r27"  # the last write of that student


def _save_then_wait(path: str, ready) -> None:
    Store(path).save(handin(9, answer="kept"))
    ready.put("saved")
    signal.pause()  # killed here, its connection still open


def test_a_confirmed_hand_in_survives_its_server_being_killed(class_db):
    path = class_db
    ready = CTX.Queue()
    p = CTX.Process(target=_save_then_wait, args=(path, ready))
    p.start()
    assert ready.get(timeout=60) == "saved"
    os.kill(p.pid, signal.SIGKILL)
    p.join(30)
    restarted = Store(path)  # a new server process reads the same file
    assert [(h.student_id, h.answer) for h in restarted.handins()] == [(sid(9), "kept")]
    restarted.save(handin(9, answer="after the restart"))
    assert restarted.get(sid(9)).submissions == 2


def test_a_forked_process_opens_its_own_connection(class_db):
    store = Store(class_db)
    store.save(handin(1))
    p = CTX.Process(target=lambda: store.save(handin(2)))
    p.start()
    p.join(60)
    assert p.exitcode == 0 and store.count() == 2
    store.save(handin(3))  # the parent's own connection was left alone by the child
    assert store.count() == 3 and store.revision() == 3


# -- PostgreSQL: what a file cannot go through -------------------------------------------------------
@pytest.mark.parametrize("url",
                         ["mysql://kvviz:secret@db/class", "postgresql://kvviz:secret@db:notaport/class",
                                 "postgresql://kvviz:secret@db:5432", "http://example.invalid/"])
def test_a_database_url_that_is_not_postgresql_is_refused_with_a_sentence(url):
    with pytest.raises(StoreError, match="KVVIZ_DB") as e:
        Store(url)
    assert "secret" not in str(e.value)


def test_an_unreachable_server_is_a_store_error_that_names_it_without_its_password():
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = Store(f"postgresql://kvviz:secret@127.0.0.1:{port}/class")
    for action in (store.revision, store.handins, lambda: store.save(handin(1))):
        with pytest.raises(StoreError, match=f"127.0.0.1:{port}/class") as e:
            action()
        assert "secret" not in str(e.value)


def test_committed_hand_ins_survive_the_database_server_crashing_and_the_store_reconnects(postgres,
                                                                                          postgres_db):
    store = Store(postgres.url(postgres_db))
    for i in range(5):
        store.save(handin(i))
    postgres.crash()  # as a power cut: no shutdown checkpoint
    try:
        with pytest.raises(StoreError):
            store.save(handin(5))  # refused while it is down (the box says "try again")
    finally:
        postgres.start()
    store.save(handin(5))  # the same Store, its pooled connection dead: reconnected
    assert (sorted(h.student_id for h in store.handins()) == [sid(i) for i in range(6)]
            and store.revision() == 6)
