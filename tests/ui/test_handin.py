"""Hand-ins in Chromium: a student hands in from Explain it back, the teacher page (/teacher) shows
it, its state link reopens the same figures; a wrong passphrase shows nothing of the class; a
hostile name or answer stays text on the page and in the CSV.

Each student is a fresh browser context (its own localStorage, so its own student id); names
carry a random tag because the server's class database is shared by the session's tests.
"""

from __future__ import annotations

import csv
import re
import secrets
import time
import warnings

import pytest
from playwright.sync_api import expect

from kvviz.handin.model import HandIn
from kvviz.handin.storage import Store
from tools.browser import settled

pytestmark = pytest.mark.ui

STATE = "reserve=12&free_r2=1&sharing=1"  # a state other than the defaults, in every live node
SHOWN_WITHIN_S = 15  # generous: the page polls every second (tests/handin/test_handin_teacher.py checks that)


def tag() -> str:
    return secrets.token_hex(3)


def open_teacher(page, served, key: str | None = None) -> None:
    page.goto(served.base + "teacher")
    page.get_by_label("Teacher passphrase").fill(served.teacher_key if key is None else key)
    page.get_by_role("button", name="Open the class").click()


def hand_in(student, name: str, answer: str, query: str = STATE) -> None:
    student.goto(f"{student.served.url}?node=explain&{query}")
    student.get_by_placeholder("Paging borrows").fill(answer)
    student.get_by_label("Your name").fill(name)
    student.get_by_role("button", name="Hand in to the teacher").click()
    expect(student.locator(".kv-h-ok")).to_contain_text(f"as “{name}”")


@pytest.fixture
def student(browser, served):
    """A student's page in its own browser context."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.served, page.kv_errors = served, []
    page.on("pageerror", lambda e: page.kv_errors.append(str(e)))
    yield page
    context.close()


def stored(served, name: str) -> HandIn:
    (h,) = [h for h in Store(served.db).handins() if h.name == name]
    return h


def metric(page, node: str, label: str):
    return page.locator(f'.kv-metric[data-node="{node}"][data-label="{label}"] .kv-value')


def test_a_hand_in_appears_for_the_teacher_and_its_link_reopens_the_same_figures(page, student, served,
                                                                                  record_property):
    open_teacher(page, served)
    expect(page.locator(".kv-t-count")).to_be_visible()
    name = f"Ada {tag()}"
    hand_in(student, name, "Paging is virtual memory; radix sharing is shared pages.")
    start = time.monotonic()
    card = page.locator(".kv-t-handin", has_text=name)
    expect(card).to_be_visible(timeout=SHOWN_WITHIN_S * 1000)
    took = time.monotonic() - start
    record_property("teacher_sees_it_s", round(took, 2))
    if took > 2:  # (0.8-1.3 s measured on a busy 2-core machine; not a failure where the machine is busier)
        warnings.warn(f"the teacher page showed the hand-in after {took:.1f} s; issue 12 asks for 2 s",
                      stacklevel=1)
    expect(card.locator(".kv-t-answer")).to_have_text("Paging is virtual memory; radix sharing is shared "
                                                      "pages.")
    h = stored(served, name)
    assert h.query == f"?{STATE}" and h.submissions == 1

    with page.context.expect_page() as opened:
        card.get_by_role("link", name=re.compile("state")).click()
    lesson = opened.value
    lesson.set_default_timeout(60_000)
    expect(lesson).to_have_url(re.compile(rf"/app\?{re.escape(STATE)}$"))
    for node in ("fragmentation", "paging", "radix"):  # each built as it is scrolled to
        lesson.locator(f".kv-node-{node}").first.scroll_into_view_if_needed()
        for label, value in h.metrics[node].items():
            if label != "step":
                expect(metric(lesson, node, label)).to_have_text(value)

    # The same browser, reloaded: its own hand-in is found by its id, and handing in again updates it.
    student.reload()
    expect(student.locator(".kv-h-ok")).to_contain_text("You handed in at")
    expect(student.get_by_label("Your name")).to_have_value(name)
    student.get_by_placeholder("Paging borrows").fill("Second thoughts.")
    student.get_by_role("button", name="Hand in to the teacher").click()
    expect(student.locator(".kv-h-ok")).to_contain_text("hand-in 2")
    expect(card.locator(".kv-t-answer")).to_have_text("Second thoughts.", timeout=SHOWN_WITHIN_S * 1000)
    expect(page.locator(".kv-t-handin", has_text=name)).to_have_count(1)
    assert stored(served, name).submissions == 2
    assert page.kv_errors == [] and student.kv_errors == []


def test_a_wrong_passphrase_shows_nothing_of_the_class(page, served):
    secret = f"Secret Student {tag()}"
    Store(served.db).save(HandIn.make(secrets.token_hex(16), secret, "a secret answer"))
    frames, urls = [], []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(str(f))))
    page.on("request", lambda r: urls.append(r.url))
    open_teacher(page, served, key=served.teacher_key + "x")
    # The server's answer: the class is built (and polled) only by the handler that gave it, so
    # nothing of it can come later.
    expect(page.locator(".kv-h-error")).to_have_text("That is not the passphrase.")
    for hidden in (".kv-t-handin", ".kv-t-count", ".kv-t-summary", ".kv-t-search"):
        expect(page.locator(hidden)).to_have_count(0)
    expect(page.get_by_text(secret)).to_have_count(0)
    assert not any(secret in f or "a secret answer" in f for f in frames)
    assert page.get_by_label("Teacher passphrase").input_value() == ""
    # The right one opens it (in a new session: the one-second back-off after a wrong one is the
    # session's, tests/handin/test_handin_teacher.py); the passphrase went over the websocket only.
    open_teacher(page, served)
    expect(page.locator(".kv-t-handin", has_text=secret)).to_be_visible()
    assert not any(served.teacher_key in u or "test%20" in u for u in urls) and "?" not in page.url
    assert page.kv_errors == []


def test_a_hostile_name_and_answer_stay_text_on_the_page_and_in_the_csv(page, student, served, tmp_path):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    t = tag()
    name = f'=HYPERLINK("x") <img src=x onerror=alert({t})>'
    answer = f"+1 <script>alert(2)</script><b>bold</b> {t}"
    hand_in(student, name, answer)
    open_teacher(page, served)
    card = page.locator(".kv-t-handin", has_text=t)
    expect(card.locator(".kv-t-name")).to_have_text(name)
    expect(card.locator(".kv-t-answer")).to_have_text(answer)
    expect(card.locator("img, script, b")).to_have_count(0)
    page.get_by_label("Search by name").fill(f"onerror=alert({t})")
    expect(page.locator(".kv-t-handin")).to_have_count(1)
    with page.expect_download() as got:
        page.get_by_role("button", name="Export CSV").click()
    path = tmp_path / "class.csv"
    got.value.save_as(path)
    rows = list(csv.DictReader(path.open(newline="", encoding="utf-8")))
    (row,) = [r for r in rows if t in r["name"]]
    assert row["name"] == "'" + name and row["answer"] == "'" + answer
    assert row["state link"].endswith(f"/app?{STATE}") and row["state link"].startswith("http://")
    assert dialogs == [] and page.kv_errors == [] and student.kv_errors == []


def test_a_student_hands_in_from_node_01s_prediction_and_the_teacher_sees_the_prediction(page, student,
                                                                                         served):
    name = f"Lin {tag()}"
    student.goto(f"{served.url}?node=fragmentation")
    student.get_by_role("button", name="Predict: refused").click()
    expect(student.locator(".kv-handin")).to_have_count(0)  # nothing offered before the engine has answered
    student.get_by_role("button", name="Free R2").click()
    verdict = student.locator('.kv-predict-note[data-node="fragmentation"]')
    expect(verdict).to_have_text("You predicted refused; the engine: refused. Right: after R2's release 16 "
                                 "blocks are free, but the longest run of them is 8, short of the 12 in a "
                                 "row R4 needs.")
    row = student.locator(".kv-predict .kv-handin-row")
    expect(row).to_be_visible()
    # under it (once the page is laid out: the verdict and the row arrive in the same update, and a
    # busy browser reports the row's box before the verdict's text has grown its own)
    settled(student)
    assert row.bounding_box()["y"] >= verdict.bounding_box()["y"] + verdict.bounding_box()["height"] - 1
    row.get_by_label("Your name").fill(name)
    row.get_by_role("button", name="Hand in to the teacher").click()
    expect(row.locator(".kv-h-ok")).to_contain_text(f"as “{name}”")
    h = stored(served, name)
    assert [(p.node, p.predicted, p.outcome, p.right) for p in h.predictions] == [
        ("fragmentation", "refused", "refused", True)]
    assert h.submissions == 1 and "free_r2=1" in h.query
    open_teacher(page, served)
    card = page.locator(".kv-t-handin", has_text=name)
    expect(card.locator(".kv-t-items li")).to_contain_text(["refused"])

    # The whole lesson in the same browser: node 01's box knows the name from the stored hand-in, and
    # Explain it back, built later as it is scrolled to, hands in as the same student (one row, twice).
    student.goto(served.url)
    student.get_by_role("button", name="Predict: admitted").click()
    student.get_by_role("button", name="Free R2").click()
    row = student.locator(".kv-node-fragmentation .kv-handin-row")
    expect(row.get_by_label("Your name")).to_have_value(name)
    expect(row.locator(".kv-h-ok")).to_contain_text("You handed in at")
    student.locator('.kv-nav-vertical a[data-node="explain"]').click()
    box = student.locator(".kv-node-explain .kv-handin")
    expect(box.get_by_label("Your name")).to_have_value(name)
    box.get_by_role("button", name="Hand in to the teacher").click()
    expect(box.locator(".kv-h-ok")).to_contain_text("hand-in 2")
    expect(row.locator(".kv-h-ok")).to_contain_text("hand-in 2")
    h = stored(served, name)
    assert h.submissions == 2 and [p.predicted for p in h.predictions] == ["admitted"]
    expect(card.locator(".kv-t-items li")).to_contain_text(["admitted"], timeout=SHOWN_WITHIN_S * 1000)
    assert page.kv_errors == [] and student.kv_errors == []
