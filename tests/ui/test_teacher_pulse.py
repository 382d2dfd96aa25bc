"""The class pulse on /teacher, in Chromium: a chart per prediction question of what the class
predicted, updating as hand-ins arrive, the engine's answer hidden until the teacher reveals it;
readable on a projector; a hostile predicted value stays text; a student's real prediction from
node 03 shows in its question's chart.

Hand-ins for the charted question are written straight to the served class database (the same
store the lesson's boxes write), under a question carrying a random tag, so the counts are this
test's own although the server's database is shared by the session's tests.
"""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from kvviz.handin.model import HandIn
from kvviz.handin.storage import Store

pytestmark = pytest.mark.ui

SHOWN_WITHIN_S = 15  # generous: the page polls every second

MIN_TEXT_PX = """el => {
  let least = 1e9;
  for (const e of [el, ...el.querySelectorAll('*')]) {
    const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (own && e.getClientRects().length) least = Math.min(least, parseFloat(getComputedStyle(e).fontSize));
  }
  return least;
}"""


def predicted(question: str, value: str) -> HandIn:
    return HandIn.make(secrets.token_hex(16), f"P {secrets.token_hex(3)}", predictions=[
        {"node": "radix", "question": question, "predicted": value, "outcome": "18", "right": value == "18"}])


def open_teacher(page, served) -> None:
    page.goto(served.base + "teacher")
    page.get_by_label("Teacher passphrase").fill(served.teacher_key)
    page.get_by_role("button", name="Open the class").click()


def test_the_pulse_shows_the_class_then_reveals_the_engine(page, served):
    t = secrets.token_hex(3)
    question, evil = f"How many blocks will BLOCKS STORED read? ({t})", f"<img src=x onerror=alert('{t}')>"
    store = Store(served.db)
    for value in ("9", "9", evil):
        store.save(predicted(question, value))
    page.set_viewport_size({"width": 1920, "height": 1080})
    open_teacher(page, served)
    chart = page.locator(".kv-p-q", has_text=t)
    says = chart.locator(".kv-p-says")
    expect(says).to_have_text(f"2 predicted 9, 1 predicted {evil} (the engine's answer is hidden)")
    expect(chart.locator(".kv-p-value")).to_have_text(["9", evil])
    expect(chart.locator("img")).to_have_count(0)
    expect(chart.locator('[data-engine="true"]')).to_have_count(0)
    expect(chart).not_to_contain_text("◀ the engine")
    assert chart.evaluate(MIN_TEXT_PX) >= 18  # readable on a projector

    store.save(predicted(question, "18"))  # handed in while the chart is on the screen
    expect(says).to_have_text(f"2 predicted 9, 1 predicted 18, 1 predicted {evil} (the engine's answer is "
                              "hidden)",
                              timeout=SHOWN_WITHIN_S * 1000)
    expect(chart.locator(".kv-p-count")).to_have_text(["2 50%", "1 25%", "1 25%"])

    page.get_by_role("button", name="Reveal the engine's answers").click()
    expect(says).to_have_text(f"2 predicted 9, 1 predicted 18, 1 predicted {evil} (the engine: 18)")
    engine = chart.locator('.kv-p-bar[data-engine="true"]')
    expect(engine).to_have_count(1)
    expect(engine.locator(".kv-p-value")).to_have_text("18")
    expect(engine).to_contain_text("◀ the engine")
    page.get_by_role("button", name="Hide the engine's answers").click()
    expect(says).to_contain_text("(the engine's answer is hidden)")
    expect(chart.locator('[data-engine="true"]')).to_have_count(0)

    page.get_by_role("button", name="Pulse only (for the projector)").click()  # no names, no verdicts
    expect(page.locator(".kv-t-summary")).to_be_hidden()
    expect(chart).to_be_visible()
    page.get_by_role("button", name="Show the hand-ins too").click()
    expect(page.locator(".kv-t-summary")).to_be_visible()
    assert page.kv_errors == []


def test_a_students_prediction_from_node_03_shows_in_its_questions_chart(page, browser, served):
    context = browser.new_context()
    student = context.new_page()
    student.set_default_timeout(60_000)
    student.goto(f"{served.url}?node=radix")
    student.locator(".kv-predict-number input").fill("27")
    student.locator(".kv-predict-number input").press("Enter")
    student.get_by_role("checkbox", name="Prefix sharing").click()
    row = student.locator(".kv-predict .kv-handin-row")
    row.get_by_label("Your name").fill(f"Kim {secrets.token_hex(3)}")
    row.get_by_role("button", name="Hand in to the teacher").click()
    expect(row.locator(".kv-h-ok")).to_contain_text("as “Kim")
    context.close()
    open_teacher(page, served)
    chart = page.locator('.kv-p-q[data-node="radix"]', has_text="Switch Prefix sharing on")
    # (only this test predicts 27 there)
    expect(chart.locator(".kv-p-says")).to_contain_text("1 predicted 27")
    assert page.kv_errors == []
