"""The class the teacher runs, without a browser (kvviz/handin/classroom.py, roster.py,
class_state.py, class_endpoint.py): what a student's page reports and how it is checked, the
roster across processes, the teacher's commands (only with the passphrase), on both stores."""

from __future__ import annotations

import json
import multiprocessing as mp
import time

import pytest
from async_support import fetch_all

from kvviz.handin import class_endpoint, class_state, classroom, roster
from kvviz.handin.classroom import ClassState, Report, ReportError
from kvviz.handin.storage import Store

NODES = ("fragmentation", "paging", "radix", "vllm", "explain")
HOSTILE = "<img src=x onerror=alert(1)>"
KEY = "teacher words"
CTX = mp.get_context("fork")


def sid(i: int) -> str:
    return f"{i:032x}"


@pytest.fixture
def db(class_db, monkeypatch):
    monkeypatch.setenv("KVVIZ_DB", class_db)
    monkeypatch.setenv("KVVIZ_TEACHER_KEY", KEY)
    class_endpoint._REPORTS.clear()
    class_endpoint._ATTEMPTS.clear()
    class_endpoint.MEMO.forget()
    return Store(class_db)


def body(**fields) -> bytes:
    return json.dumps({"student_id": sid(1), "node": "paging", "predicted": ["fragmentation"],
                       **fields}).encode()


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


# -- a report, checked --------------------------------------------------------------------------
def test_a_report_keeps_only_what_the_page_may_say():
    r = Report.from_json({"student_id": sid(1), "node": "radix", "predicted": ["radix", "fragmentation"],
                          "name": "  Ada\n\u202eLovelace  " + "x" * 100, "query": "?sharing=1"}, NODES)
    assert r.query == "?sharing=1"
    assert r.node == "radix" and r.predicted == ("fragmentation", "radix")  # (page order)
    assert r.name.startswith("Ada Lovelace") and len(r.name) == 60 and "\u202e" not in r.name
    assert Report.from_json({"student_id": sid(1)}, NODES) == Report(sid(1))


@pytest.mark.parametrize("data", [
    [1], {"student_id": "../etc"}, {"student_id": sid(1), "node": "nowhere"},
    {"student_id": sid(1), "predicted": ["radix", "radix"]}, {"student_id": sid(1), "predicted": "radix"},
    {"student_id": sid(1), "predicted": ["x"] * 3}, {"student_id": sid(1), "name": 7},
    {"student_id": sid(1), "predicted_values": {"radix": "18"}},  # (what was predicted is never sent)
    {"student_id": sid(1), "query": "?a=<script>"}, {"student_id": sid(1), "query": "javascript:alert(1)"},
    {"student_id": sid(1), "query": "?" + "a" * 3000},
])
def test_a_spoofed_or_malformed_report_is_refused(data):
    with pytest.raises(ReportError):
        Report.from_json(data, NODES)


# -- the endpoint -------------------------------------------------------------------------------
def test_the_first_report_claims_the_id_and_a_later_one_must_prove_it(db):
    clock = Clock()
    status, answer = class_endpoint.report(body(name=HOSTILE), NODES, db, clock)
    assert status == 200 and answer["message"] == "created" and classroom.TOKEN.fullmatch(answer["token"])
    clock.t += 2
    # Another page that knows the id but not the token cannot move that student on the roster.
    status, answer = class_endpoint.report(body(node="explain"), NODES, db, clock)
    assert status == 403 and not answer["ok"]
    clock.t += 2
    status, answer = class_endpoint.report(body(node="explain", token="0" * 64), NODES, db, clock)
    assert status == 403
    [seen] = roster.seen(db, now=__import__("time").time())
    assert seen.node == "paging" and seen.name == HOSTILE  # (kept as text: escaped where shown)
    clock.t += 2
    token = roster.token(db, sid(1))
    status, answer = class_endpoint.report(body(node="explain", predicted=[], token=token, name=""), NODES,
                                           db, clock)
    assert status == 200 and answer["message"] == "updated" and "token" not in answer
    [seen] = roster.seen(db, now=__import__("time").time())
    assert (seen.node, seen.predicted, seen.name) == ("explain", (), HOSTILE)  # (an empty name erases none)


def test_a_page_reports_at_under_half_the_rate_the_server_takes():
    # (a report delayed on its way must not make the page's next one arrive inside the server's gap)
    assert classroom.PAGE_REPORT_GAP_MS / 1000 > 2 * classroom.REPORT_GAP_S
    config = classroom.browser_config("r", "s", (("paging", "02", "Paging"),))
    assert config["gap_ms"] == classroom.PAGE_REPORT_GAP_MS


def test_reports_are_capped_and_rate_limited(db):
    clock = Clock()
    assert class_endpoint.report(b"x" * (classroom.MAX_REPORT + 1), NODES, db, clock)[0] == 413
    assert class_endpoint.report(b"{nope", NODES, db, clock)[0] == 400
    assert class_endpoint.report(body(), NODES, db, clock)[0] == 200
    again = body(token=roster.token(db, sid(1)))
    # (a page's reports held up on the way and delivered together pass, up to REPORT_BURST ...)
    assert [class_endpoint.report(again, NODES, db, clock)[0]
            for _ in range(classroom.REPORT_BURST)] == [200] * (classroom.REPORT_BURST - 1) + [429]
    clock.t += classroom.REPORT_GAP_S / 2
    assert class_endpoint.report(again, NODES, db, clock)[0] == 429  # (... then one per REPORT_GAP_S)
    clock.t += classroom.REPORT_GAP_S / 2
    assert class_endpoint.report(again, NODES, db, clock)[0] == 200
    assert class_endpoint.report(again, NODES, db, clock)[0] == 429


def test_the_roster_is_full_at_its_cap(db, monkeypatch):
    monkeypatch.setattr(roster, "MAX_ROSTER", 2)
    for i in range(2):
        assert roster.save(db, Report(sid(i)), now=10.0 + i, owner=False) == "created"
    assert roster.save(db, Report(sid(9)), now=20.0, owner=False) == "full"
    assert roster.save(db, Report(sid(0), node="radix"), now=20.0, owner=True) == "updated"


def test_the_roster_lists_recent_students_in_arrival_order(db):
    roster.save(db, Report(sid(2), "radix", ("radix",), "Bo"), now=1000.0, owner=False)
    roster.save(db, Report(sid(1), "paging", (), "Al"), now=1001.0, owner=False)
    roster.save(db, Report(sid(3), "paging"), now=1000.0 - classroom.SEEN_S - 1, owner=False)  # (yesterday's)
    roster.save(db, Report(sid(2), "explain", ("radix",)), now=1002.0, owner=True)
    seen = roster.seen(db, now=1003.0)
    assert [(s.name, s.node, s.predicted) for s in seen] == [("Bo", "explain", ("radix",)),
                                                             ("Al", "paging", ())]
    assert roster.clear(db, now=1001.5) == 2 and [s.name for s in roster.seen(db, now=1003.0)] == ["Bo"]


def _report_many(target: str, first: int, out) -> None:
    store = Store(target)
    for i in range(first, first + 10):
        roster.save(store, Report(sid(i), "radix"), now=5000.0, owner=False)
    out.put(roster.token(store, sid(first)))


def test_every_process_writes_one_roster_and_agrees_on_the_tokens(db, class_db):
    db.revision()  # (the tables made)
    out = CTX.Queue()
    procs = [CTX.Process(target=_report_many, args=(class_db, 100 * k, out)) for k in range(4)]
    for p in procs:
        p.start()
    tokens = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    assert len(roster.seen(Store(class_db), now=5001.0)) == 40
    assert sorted(tokens) == sorted(roster.token(Store(class_db), sid(100 * k)) for k in range(4))


def _backend_then_killed(target: str, out, hold) -> None:
    """A backend that takes its students' first reports (answering each with its token), then is
    killed mid-class (it waits on `hold` until the test kills it)."""
    class_endpoint._REPORTS.clear()
    store = Store(target)
    for i in range(30):
        status, answer = class_endpoint.report(body(student_id=sid(i), predicted=[]), NODES, store)
        out.put((i, status, answer.get("token")))
    hold.wait(60)


def test_a_backend_killed_mid_class_loses_no_roster_entry_its_students_report_again(db, class_db):
    db.revision()  # (the tables made)
    out, hold = CTX.Queue(), CTX.Event()
    killed = CTX.Process(target=_backend_then_killed, args=(class_db, out, hold))
    killed.start()
    first = [out.get(timeout=60) for _ in range(30)]
    killed.kill()  # (SIGKILL: no goodbye)
    killed.join(30)
    assert all(status == 200 and token for _i, status, token in first)
    # its students' pages are sent to another backend (this process) and report again, with their
    # tokens: each is accepted and updates its row; nothing was lost with the killed process
    for i, _status, token in first:
        again = body(student_id=sid(i), node="radix", predicted=[], token=token)
        status, answer = class_endpoint.report(again, NODES, db)
        assert status == 200, answer
    seen = roster.seen(db, now=time.time() + 1)
    assert sorted(s.student_id for s in seen) == sorted(sid(i) for i in range(30))
    assert {s.node for s in seen} == {"radix"}
    # ... and a page that does not hold a student's token cannot take that student over
    class_endpoint._REPORTS.clear()  # (past the per-student gap)
    status, answer = class_endpoint.report(body(student_id=sid(3), node="paging", predicted=[]), NODES, db)
    assert status == 403


# -- the teacher's commands ---------------------------------------------------------------------
def command(db, what: dict, key: str = KEY, peer: str = "10.0.0.1"):
    return class_endpoint.command(json.dumps(what).encode(), f"Bearer {key}", peer, NODES, db)


def test_a_student_page_cannot_pause_pace_or_follow(db):
    for what in ({"command": "pause"}, {"command": "pace", "node": "paging"},
                 {"command": "follow", "node": "radix"}):
        status, answer = class_endpoint.command(json.dumps(what).encode(), "", f"10.0.0.{len(what)}", NODES,
                                                db)
        assert status == 403 and not answer["ok"]
    assert command(db, {"command": "pause"}, key="guess", peer="10.0.0.9")[0] == 403
    assert command(db, {"command": "pause"}, peer="10.0.0.9")[0] == 429  # (the wait after a wrong one)
    assert class_state.current(db) == ClassState()


def test_the_teachers_commands_set_the_state_every_page_polls(db):
    first = class_endpoint.status(db)
    assert first == {"paused": False, "pace": "", "follow": {"seq": 0, "node": "", "query": ""},
                     "tag": first["tag"]}
    assert command(db, {"command": "pause"})[0] == 200
    assert class_endpoint.status(db)["paused"] is True
    assert command(db, {"command": "pace", "node": "paging"})[0] == 200
    status, answer = command(db, {"command": "follow", "node": "radix",
                                  "query": "http://class.example/lesson/?sharing=0&at_radix=0"})
    assert (status == 200
            and answer["state"]["follow"] == {"seq": 1, "node": "radix", "query": "?sharing=0&at_radix=0"})
    command(db, {"command": "resume"})
    state = class_endpoint.status(db)
    assert state == {"paused": False, "pace": "paging", "tag": state["tag"],
                     "follow": {"seq": 1, "node": "radix", "query": "?sharing=0&at_radix=0"}}
    assert state["tag"] != first["tag"]
    for bad in ({"command": "explode"}, {"command": "pace", "node": "nowhere"},
                {"command": "follow", "node": ""},
                {"command": "follow", "node": "radix", "query": "?a=<script>"}):
        assert command(db, bad)[0] == 400
    assert class_state.current(db).follow.seq == 1


def test_polls_read_the_store_at_most_once_per_memo_period(db):
    clock, reads = Clock(), []
    memo = class_state.Memo(clock)
    real = class_state.current

    def counted(store):
        reads.append(1)
        return real(store)

    import kvviz.handin.class_state as cs
    cs.current, original = counted, cs.current
    try:
        for _ in range(50):
            memo.get(db)
        clock.t += class_state.MEMO_S
        memo.get(db)
    finally:
        cs.current = original
    assert len(reads) == 2


# -- over HTTP ------------------------------------------------------------------------------------
def test_a_page_without_the_passphrase_gets_403_and_the_poll_is_revalidated(tmp_path, monkeypatch):
    monkeypatch.setenv("KVVIZ_DB", str(tmp_path / "class.db"))
    monkeypatch.setenv("KVVIZ_TEACHER_KEY", KEY)
    class_endpoint.MEMO.forget()
    class_endpoint._ATTEMPTS.clear()
    routes = [(r"/lesson-report", class_endpoint.ReportHandler, {"nodes": NODES}),
              (r"/lesson-class", class_endpoint.ClassHandler, {"nodes": NODES})]
    json_ = {"Content-Type": "application/json"}
    teacher = {**json_, "Authorization": f"Bearer {KEY}"}
    refused, form, first = fetch_all(routes, [
        ("POST", "/lesson-class", json_, b'{"command": "pause"}'),
        ("POST", "/lesson-class", {"Authorization": f"Bearer {KEY}"}, b"command=pause"),
        ("GET", "/lesson-class", {})])
    assert refused.code == 403
    assert form.code == 415  # (a cross-site form cannot send it)
    assert (first.code == 200 and first.headers["Cache-Control"] == "no-cache"
            and not json.loads(first.body)["paused"])
    tag = {"If-None-Match": first.headers["Etag"]}
    again, ok, after, report = fetch_all(routes, [
        ("GET", "/lesson-class", tag),
        ("POST", "/lesson-class", teacher, b'{"command": "pause"}'),
        ("GET", "/lesson-class", tag),
        ("POST", "/lesson-report", json_, body())])
    assert again.code == 304
    assert ok.code == 200
    assert after.code == 200 and json.loads(after.body)["paused"] is True
    assert report.code == 200 and "token" in json.loads(report.body)


# -- the teacher's side, driven in Python ---------------------------------------------------------
OUTLINE = (("fragmentation", "01", "Fragmentation"), ("paging", "02", "Paging"), ("radix", "03", "Sharing"),
           ("vllm", "04", "vLLM"), ("explain", "✎", "Explain it back"))


def test_the_roster_counts_each_node_and_a_hostile_name_stays_text():
    from kvviz.handin.roster import Seen
    from kvviz.handin.roster_html import counts, roster_html

    seen = [Seen(sid(1), HOSTILE, "radix", ("fragmentation", "radix"), "?sharing=1&free_r2=1", 1.0, 100.0),
            Seen(sid(2), "Bo", "paging", (), "", 2.0, 100.0), Seen(sid(3), "", "", (), "", 3.0, 0.0)]
    assert counts(seen, OUTLINE) == {"": 1, "fragmentation": 0, "paging": 1, "radix": 1, "vllm": 0,
                                     "explain": 0}
    text = roster_html(seen, OUTLINE, now=101.0, anonymous=False)
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "<b>3</b> students on the lesson · 1 away" in text and "Student 3 (no name yet)" in text
    assert "Show Student 3's state" in text
    # each row node by node, in page order of where they are: Bo (02) before the hostile name (03)
    assert text.index("Bo") < text.index("&lt;img")
    rows = text[text.index("<tbody>"):]
    assert rows.count('data-here="true"') == 2 and rows.count("✓") == 2
    # Show: the recorded lesson at the student's last reported state, named as the roster names them
    assert 'href="lesson/?sharing=1&amp;free_r2=1"' in text and "Show &lt;img" in text
    hidden = roster_html(seen, OUTLINE, now=101.0, anonymous=True)
    assert "Show Student 1's state" in hidden
    assert "Bo" not in hidden and "&lt;img" not in hidden and "Student 1" in hidden and "Student 2" in hidden


def test_the_unlocked_teacher_page_shows_the_roster_and_pauses_the_class(tmp_path, monkeypatch):
    from kvviz.handin import teacher_view

    monkeypatch.setenv("KVVIZ_TEACHER_KEY", KEY)
    store = Store(tmp_path / "class.db")
    roster.save(store, Report(sid(1), "paging", ("fragmentation",), "Ada"), now=__import__("time").time(),
                owner=False)
    page = teacher_view.TeacherPage(store=store, outline=OUTLINE)
    assert page.unlock(KEY)
    controls = page.classroom
    assert "Ada" in controls.roster.object and "<b>1</b> student on the lesson" in controls.roster.object
    controls.anon.clicks += 1
    assert "Ada" not in controls.roster.object and "Student 1" in controls.roster.object
    assert controls.anon.label == "Show the names"
    controls.pause.clicks += 1
    assert class_state.current(store).paused and controls.pause.label == "Resume the class"
    controls.pace.value = "paging"
    assert class_state.current(store).pace == "paging"
    controls.follow_node.value = "radix"
    controls.follow_link.value = "?sharing=0"
    controls.follow.clicks += 1
    assert class_state.current(store).follow == classroom.Follow(1, "radix", "?sharing=0")
    controls.follow_link.value = "javascript:alert(1)"
    controls.follow.clicks += 1
    assert class_state.current(store).follow.seq == 1 and "not a link" in controls.said.object
    controls.pause.clicks += 1
    assert not class_state.current(store).paused
    page.ask_clear()
    page.clear()
    assert roster.seen(store, now=__import__("time").time()) == []
