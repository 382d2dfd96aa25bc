"""The teacher runs the class from /teacher, in Chromium: students on the recorded lesson (`/`)
appear on the live roster at the node they are on, with the nodes where they made a prediction;
Pause covers every student's page with "Eyes on the teacher" until resumed; the projector's
switch hides the names; a hostile name stays text; a student's page cannot pause the class.

Each student is a fresh browser context (its own student id). The server's database is shared by
the session's tests, so names carry a random tag and rows are found by it.
"""

from __future__ import annotations

import json
import re
import secrets

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def recorded(served):
    served.wait_for_recordings()
    return served


@pytest.fixture(autouse=True)
def class_state_as_found(served):
    """The session's other tests share this server and its class database: each test here leaves
    the class as it found it (not paused, no pace, no "follow me" that a page opened later would
    apply), whatever it asserted."""
    yield
    from kvviz.handin.class_state import NAME
    from kvviz.handin.classroom import ClassState
    from kvviz.handin.storage import Store

    Store(served.db).update_meta(NAME, lambda _old: ClassState().to_json())


def open_student(browser, base: str):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.kv_errors = []
    page.on("pageerror", lambda e: page.kv_errors.append(str(e)))
    page.goto(base)
    for key in ("Fragmentation", "Paging", "Radix"):
        page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'")
    return page


def open_teacher(page, served) -> None:
    page.goto(served.base + "teacher")
    page.get_by_label("Teacher passphrase").fill(served.teacher_key)
    page.get_by_role("button", name="Open the class").click()


def test_the_roster_follows_students_and_pause_stops_every_page(page, browser, recorded):
    t = secrets.token_hex(3)
    ada, evil = f"Ada {t}", f"<img src=x onerror=alert('{t}')>"
    first, second = open_student(browser, recorded.base), open_student(browser, recorded.base)
    # (a state of its own: sent with the next report)
    first.get_by_role("button", name="Free R2").first.click()
    first.locator(".kv-handin-name").last.fill(ada)  # (the hand-in box's name: the roster's too)
    first.locator(".kv-node-fragmentation").first.scroll_into_view_if_needed()
    second.locator(".kv-handin-name").last.fill(evil)
    box = second.locator(".kv-predict-number input")
    box.fill("20")
    box.press("Enter")  # (a prediction locked in on node 03: the roster shows it made, not its value)
    second.locator(".kv-node-radix").first.scroll_into_view_if_needed()

    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_teacher(page, recorded)
    row_ada = page.locator(".kv-r-row", has_text=ada)
    row_evil = page.locator(".kv-r-row", has_text=evil)
    expect(row_ada.locator('td[data-here="true"]')).to_have_attribute("data-node", "fragmentation")
    expect(row_evil.locator('td[data-here="true"]')).to_have_attribute("data-node", "radix")
    expect(row_evil.locator('td[data-node="radix"]')).to_have_text("●✓")
    assert "20" not in row_evil.inner_text().replace(evil, "")  # (the value predicted is never sent)
    expect(page.locator(".kv-r img")).to_have_count(0)
    expect(page.locator('.kv-r-count[data-node="radix"] b')).not_to_have_text("0")

    # Show a student's state: the recorded lesson at the state their page last reported.
    show = row_ada.get_by_role("link", name=f"Show {ada}'s state ↗")
    expect(show).to_have_attribute("href", re.compile(r"^lesson/\?.*free_r2=1"))
    with page.context.expect_page() as shown:
        show.click()
    projector = shown.value
    projector.wait_for_function("document.documentElement.dataset.kvReadyFragmentation === '1'")
    expect(projector.locator('.kv-metric[data-label="LARGEST GAP"] .kv-value').first).to_have_text(
        "8 / 16 free")
    projector.close()

    # Pause: every student's page says so, and a shortcut key does nothing under it.
    page.get_by_role("button", name="Pause the class").click()
    for student in (first, second):
        expect(student.get_by_role("alertdialog")).to_contain_text("Eyes on the teacher")
    step = second.locator('.kv-step[data-node="radix"]').first
    before = step.inner_text()
    second.keyboard.press("ArrowRight")
    assert step.inner_text() == before
    page.get_by_role("button", name="Resume the class").click()
    for student in (first, second):
        expect(student.get_by_role("alertdialog")).to_have_count(0)

    # The projector's switch: no names.
    page.get_by_role("button", name="Anonymise names (for the projector)").click()
    expect(page.locator(".kv-r-row", has_text=ada)).to_have_count(0)
    # (the session's other tests' pages are on the roster too: every row is "Student N" now)
    names = page.locator(".kv-r-row .kv-r-name").all_inner_texts()
    assert names and all(re.match(r"\s*Student \d+", n) for n in names), names

    # A student's page cannot pause the class (nor can anything without the passphrase).
    status = second.evaluate("""async () => (await fetch('../lesson-class', {method: 'POST',
        headers: {'Content-Type': 'application/json'}, body: JSON.stringify({command: 'pause'})})).status""")
    assert status == 403
    assert dialogs == [] and first.kv_errors == [] and second.kv_errors == [] and page.kv_errors == []
    for student in (first, second):
        student.context.close()


def test_a_page_sends_no_report_while_its_last_is_unanswered(browser, recorded):
    """A busy server may answer a page's first report (which brings the page its roster token) later
    than the next is due: that one waits for the answer and carries the token. (It went without one,
    was refused as another page's id, 403, and the page reported no more: CI, at 815198d.)"""
    context = browser.new_context()
    page = context.new_page()
    held, bodies = [], []

    def hold_the_first(route, request):
        bodies.append(json.loads(request.post_data or "{}"))
        if len(bodies) == 1:
            held.append(route)  # (answered below, once a change is due)
        else:
            route.continue_()

    page.route("**/lesson-report", hold_the_first)
    page.goto(recorded.base)
    page.wait_for_function("document.documentElement.dataset.kvReadyRadix === '1'")
    page.wait_for_timeout(200)
    assert len(bodies) == 1 and "token" not in bodies[0]
    page.locator(".kv-node-radix").first.scroll_into_view_if_needed()  # (a change to report)
    page.wait_for_timeout(2_000)  # (more than a report's gap, 1.2 s)
    assert len(bodies) == 1  # (none sent while the first is unanswered)
    held[0].continue_()
    page.wait_for_timeout(2_500)
    assert len(bodies) >= 2 and all(b.get("token") for b in bodies[1:]), bodies
    assert bodies[-1]["node"] == "radix"
    context.close()


def test_pace_holds_the_nodes_past_it_and_follow_me_brings_every_page_to_a_state(page, browser, recorded):
    student = open_student(browser, recorded.base)
    open_teacher(page, recorded)
    page.locator(".kv-c-pace select").select_option(label="01 · Fragmentation")
    held = student.locator(".kv-node-radix").first
    expect(held).to_have_attribute("data-kv-held", "1")
    expect(student.locator("#kv-class-pace")).to_contain_text("Your teacher opens node 02")
    expect(student.locator(".kv-node-fragmentation").first).not_to_have_attribute("data-kv-held", "1")
    page.locator(".kv-c-pace select").select_option(label="Any node (no limit)")
    expect(held).not_to_have_attribute("data-kv-held", "1")
    expect(student.locator("#kv-class-pace")).to_have_count(0)

    # Follow me: node 03 with sharing on (a recorded state: the page shows it, nothing computed).
    stored = student.locator('.kv-metric[data-label="BLOCKS STORED"] .kv-value').first
    expect(stored).not_to_have_text("18 blk")
    page.locator(".kv-c-node select").select_option(label="03 · RadixAttention")
    page.locator(".kv-c-link input").fill(recorded.base + "lesson/?sharing=1")
    page.get_by_role("button", name="Follow me: bring everyone there").click()
    expect(student.locator("#kv-class-followed")).to_contain_text("brought the class here (node 03)")
    expect(stored).to_have_text("18 blk")
    expect(student.locator(".kv-live-frame")).to_have_count(0)
    # ... once: the student may move on, and the class's next states do not bring them back.
    student.get_by_role("checkbox", name="Prefix sharing").uncheck()
    expect(stored).not_to_have_text("18 blk")
    # (each a new state that reaches the page: seen there before the next. Resumed at once, the
    # class's state would read as before the pause, and a held poll would see no change to answer.)
    page.get_by_role("button", name="Pause the class").click()
    expect(student.get_by_role("alertdialog")).to_contain_text("Eyes on the teacher")
    page.get_by_role("button", name="Resume the class").click()
    expect(student.get_by_role("alertdialog")).to_have_count(0)
    expect(stored).not_to_have_text("18 blk")
    assert student.kv_errors == [] and page.kv_errors == []
    student.context.close()


SMALL_TARGETS = """() => {
  const out = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('button, input, select, a, summary')) {
      const r = el.getBoundingClientRect();
      if (r.width && r.height && r.height < 44) out.push(`${el.tagName} ${(el.textContent || el.type || '').trim().slice(0, 30)} ${Math.round(r.height)}px`);
    }
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  return out;
}"""  # noqa: E501 (data: a string kept as written)


def test_the_teacher_page_fits_a_phone_with_the_students_address_on_top(page, served):
    page.set_viewport_size({"width": 390, "height": 844})
    open_teacher(page, served)
    address = page.locator(".kv-t-address")
    expect(address).to_contain_text("Students open")
    expect(page.locator(".kv-r")).to_be_visible()
    box = address.bounding_box()
    title = page.locator(".kv-t-title h1").bounding_box()
    assert box["y"] < title["y"]  # (above everything else)
    assert float(address.evaluate("el => getComputedStyle(el).fontSize").removesuffix("px")) >= 20
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert 'width=device-width' in page.locator('meta[name="viewport"]').get_attribute("content")
    # The developer's hint is folded away at the foot, not in the teacher's way.
    hint = page.locator("details.kv-t-vllm")
    expect(hint).not_to_have_attribute("open", "")
    assert hint.bounding_box()["y"] > page.locator(".kv-p").bounding_box()["y"]
    assert page.evaluate(SMALL_TARGETS) == []
