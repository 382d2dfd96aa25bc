"""Accessibility in Chromium (issue 19): axe-core finds nothing serious or critical on the full
page with every node built, on each node's own page and on /teacher; every control the keyboard
reaches shows a visible focus ring (kvviz.css, linked into every widget's shadow root)."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from kvviz.nodes import KEYS
from tools.browser import settled

pytestmark = pytest.mark.ui

SERIOUS = ("serious", "critical")
TABS = 80  # key presses: more than any page has controls, so the focus goes round at least once

# The element that has the focus, through every shadow root, and how its focus shows.
FOCUSED_JS = """() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  if (!el || el === document.body) return null;
  const ring = (e) => { const cs = getComputedStyle(e);
    return cs.outlineStyle !== "none" && parseFloat(cs.outlineWidth) >= 2; };
  // a figure's canvas is ringed on the figure that holds it (its shadow root is out of reach)
  let host = el, ringed = ring(el);
  while (!ringed && host.getRootNode().host) { host = host.getRootNode().host; ringed = ring(host) && host.classList.contains("bk-Figure"); }
  const label = el.getAttribute("aria-label") || el.innerText || el.value || el.placeholder || "";
  return { what: `${el.tagName}.${String(el.className || "").split(" ").join(".")} ${label.slice(0, 40)}`, ringed };
}"""  # noqa: E501 (data: a string kept as written)


def serious(page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now (one line each)."""
    found = Axe().run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:4]}" for v in found
            if v["impact"] in SERIOUS]


def build_every_node(page) -> None:
    for key in KEYS:  # scrolled through: each node is built as it comes near (kvviz/web/lazy.py)
        page.locator(f".kv-node-{key}").first.scroll_into_view_if_needed()
        expect(page.locator(f".kv-node-{key} .kv-slot-waiting")).to_have_count(0, timeout=60_000)
    expect(page.locator(".kv-slot-waiting")).to_have_count(0, timeout=60_000)
    for key in KEYS:
        expect(page.locator(f".kv-node.kv-node-{key}").first).to_be_attached()


def focus_rings(page) -> tuple[int, list[str]]:
    """Tab through the page: (how many controls took the focus, those with no visible ring)."""
    seen, bare = set(), []
    for _ in range(TABS):
        page.keyboard.press("Tab")
        f = page.evaluate(FOCUSED_JS)
        if f is None or f["what"] in seen:
            continue
        seen.add(f["what"])
        if not f["ringed"]:
            bare.append(f["what"])
    return len(seen), bare


def test_full_page_with_every_node_built_has_no_serious_violation(page, lesson_url):
    page.goto(lesson_url)
    build_every_node(page)
    assert serious(page) == []


@pytest.mark.parametrize("node", KEYS)
def test_each_node_page_has_no_serious_violation(page, lesson_url, node):
    page.goto(f"{lesson_url}?node={node}")
    expect(page.locator(f".kv-node-{node}").first).to_be_attached()
    settled(page)  # (its figures drawn)
    assert serious(page) == []


def test_node_01_after_a_wrong_prediction_and_free_r2_has_no_serious_violation(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    free = page.get_by_role("button", name="Free R2")
    colours = free.evaluate("b => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]")
    assert colours[0] != "rgb(255, 255, 255)", colours  # (white on its orange read 1.9:1)
    page.get_by_role("button", name="Predict: admitted").click()
    free.click()
    expect(page.locator(".kv-predict-note.kv-wrong")).to_contain_text("Not this time")
    assert serious(page) == []


def test_teacher_page_locked_and_unlocked_has_no_serious_violation(page, served):
    page.goto(served.base + "teacher")
    box = page.get_by_label("Teacher passphrase")
    expect(box).to_be_visible()
    assert serious(page) == []
    box.fill(served.teacher_key)
    page.get_by_role("button", name="Open the class").click()
    expect(box).to_be_hidden(timeout=15_000)
    settled(page)
    assert serious(page) == []


@pytest.mark.parametrize("node", ["fragmentation", "paging", "radix", "explain"])
def test_every_control_shows_a_focus_ring(page, lesson_url, node):
    page.goto(f"{lesson_url}?node={node}")
    expect(page.locator(f".kv-node-{node}").first).to_be_attached()
    settled(page)
    reached, bare = focus_rings(page)
    assert reached >= 4, reached  # (the keyboard reached the node's controls)
    assert bare == []


def test_the_teacher_page_controls_show_a_focus_ring(page, served):
    page.goto(served.base + "teacher")
    expect(page.get_by_label("Teacher passphrase")).to_be_visible()
    reached, bare = focus_rings(page)
    assert reached >= 2 and bare == [], (reached, bare)


def test_the_recorded_lesson_students_open_has_nothing_serious_and_rings_its_controls(page, served):
    """/ (the recorded lesson, played in the browser) is what a class opens first."""
    served.wait_for_recordings()
    page.goto(served.base)
    for key in ("Fragmentation", "Paging", "Radix"):
        page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'")
    assert serious(page) == []
    reached, bare = focus_rings(page)
    assert reached >= 10 and bare == []


def every_violation(page) -> list[str]:
    """axe-core's violations of any impact (one line each)."""
    found = Axe().run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:4]}" for v in found]


@pytest.mark.parametrize("query", ["", "?node=fragmentation", "?node=paging", "?node=radix"])
def test_the_played_pages_have_no_violation_of_any_impact(page, served, query):
    """Issue 28: the page students open, whole and node by node, with nothing axe-core finds (of
    any impact: the landmarks, the h1, the heading order, unique navigation names included)."""
    served.wait_for_recordings()
    page.goto(served.base + query)
    page.wait_for_function("document.documentElement.dataset.kvReadyFragmentation === '1'"
                           if query in ("", "?node=fragmentation") else
                           f"document.documentElement.dataset.kvReady{query[6:].title()} === '1'")
    settled(page)
    assert every_violation(page) == []


def test_the_live_page_and_the_teacher_page_have_no_violation_of_any_impact(page, served, lesson_url):
    page.goto(lesson_url)
    build_every_node(page)
    assert every_violation(page) == []
    page.goto(served.base + "teacher")
    expect(page.get_by_label("Teacher passphrase")).to_be_visible()
    # (the page's title is a pane of its own: under CI's load it can be drawn after the passphrase box)
    expect(page.get_by_role("heading", name="Your class", level=1)).to_be_visible()
    settled(page)
    assert every_violation(page) == []
