"""The page students open is the whole lesson, equal to the live one (issue 28), in Chromium: node
02's block table drawn as it opens, no request of any kind for a scripted action, a typed prompt,
the shortcut keys, a link it cannot read, Explain it back and its hand-in, a link into it."""

from __future__ import annotations

import re

import pytest
from played_support import LIVE_MS, metric, open_lesson
from playwright.sync_api import expect

from kvviz.handin.model import RateLimit
from tools.browser import settled

pytestmark = pytest.mark.ui


# -- issue 28: the page students open is the whole lesson, equal to the live one -------------
def _paging_step(page) -> int:
    return int(page.locator('.kv-step[data-node="paging"] b').inner_text())


def test_node_02_draws_its_block_table_when_the_page_opens(page, recorded):
    """The page table's logical pages are there at once (the recorded state is a reset one, as a
    new live page is: its first request's table drawn)."""
    open_lesson(page, recorded)
    paged = page.locator('.kv-pagetable-text[data-pool="paged"]')
    expect(paged).to_contain_text("R1 in the paged pool: page 0 → block")
    pages = page.evaluate("""() => { for (const m of Bokeh.documents[0].all_models) {
        const d = m.data; if (d && d.info && d.label && Array.from(d.info).some((i) => String(i).startsWith('logical page')))
          return Array.from(d.label).filter((x) => x).length; } return 0; }""")  # noqa: E501 (data: a string kept as written)
    assert pages > 0


def test_scripted_actions_send_no_request_of_any_kind(page, recorded):
    """Node 02's Add request (which redraws its Block table select), Rewind, Step, node 01's and
    03's controls: played in the page, with not one request (no engine call, no icon, no
    stylesheet asked again), and every Step changes the step."""
    traffic = open_lesson(page, recorded)
    page.get_by_role("button", name="Free R2").first.click()  # (each component drawn once: its
    page.get_by_role("button", name="Reset").first.click()  # stylesheets are fetched then, once)
    settled(page)
    sent = len(traffic["requests"])
    add = page.get_by_role("button", name="Add request").first
    for _ in range(2):  # (each played to its end: one added while the last plays is the server's, as live)
        add.click()
        expect(page.locator('.kv-step[data-node="paging"]')).to_contain_text("idle", timeout=30_000)
    page.get_by_role("button", name="⟲ Rewind").nth(1).click()  # (stops the Play an Add started)
    expect(page.locator('.kv-step[data-node="paging"]')).to_contain_text("step 0")
    for n in range(1, 4):
        page.get_by_role("button", name="Step ▶").nth(1).click()
        expect(page.locator('.kv-step[data-node="paging"]')).to_contain_text(f"step {n}")
    page.get_by_role("button", name="Free R2").first.click()
    page.get_by_role("checkbox", name="Prefix sharing").check()
    expect(metric(page, "BLOCKS STORED")).to_have_text("18 blk")
    page.wait_for_function("() => /[?&]sharing=1/.test(location.search)")  # (the address bar: written last)
    assert traffic["requests"][sent:] == [] and traffic["ws"] == []
    assert not page.evaluate("window.kvvizPlayer.nodes.paging.branch").startswith("live")
    assert page.kv_errors == []


def test_a_typed_prompt_is_what_add_request_adds(page, recorded):
    """Typing a prompt, then clicking Add request (not Enter): the server runs that prompt."""
    traffic = open_lesson(page, recorded)
    box = page.get_by_role("textbox", name=re.compile("Prompt")).first
    box.fill("Pages of my own")
    page.get_by_role("button", name="Add request").first.click()
    expect(page.locator(".kv-live-note").first).to_contain_text("Live", timeout=LIVE_MS)
    asked = [u for u in traffic["requests"] if "/lesson-live?" in u]
    assert len(asked) == 1 and "Pages+of+my+own" in asked[0].replace("%20", "+")
    expect(page).to_have_url(re.compile(r"add=Pages"))


def test_the_shortcut_keys_drive_the_node_in_view(page, recorded):
    traffic = open_lesson(page, recorded)
    page.locator('.kv-step[data-node="paging"]').scroll_into_view_if_needed()
    settled(page)
    sent = len(traffic["requests"])
    page.keyboard.press("r")
    page.keyboard.press("ArrowLeft")
    before = _paging_step(page)
    page.keyboard.press("ArrowLeft")
    expect(page.locator('.kv-step[data-node="paging"] b')).to_have_text(str(before - 1))
    page.keyboard.press("ArrowRight")
    expect(page.locator('.kv-step[data-node="paging"] b')).to_have_text(str(before))
    page.keyboard.press(" ")
    expect(page.locator('.kv-step[data-node="paging"]')).to_contain_text("playing")
    expect(page.get_by_role("button", name="❚❚ Pause")).to_have_count(1)
    expect(page.locator('.kv-step[data-node="paging"]')).to_contain_text("idle", timeout=20_000)
    expect(page.get_by_role("button", name="❚❚ Pause")).to_have_count(0)
    assert traffic["requests"][sent:] == []


def test_a_link_it_cannot_read_says_so(page, recorded):
    """As the live lesson does: a malformed parameter falls back to its default, in words."""
    open_lesson(page, recorded, "?reserve=banana")
    expect(page.locator(".kv-url-notice").first).to_contain_text("reserve", timeout=LIVE_MS)


def test_the_page_is_the_whole_lesson_in_its_frame(page, recorded):
    """Title (the page's h1), intro, the three ideas, every node, the closing summary and what to
    read next, in the page's main landmark; the provenance is one line at its foot."""
    open_lesson(page, recorded)
    expect(page.get_by_role("heading", level=1)).to_have_text("Managing the KV cache")
    assert page.locator("main").count() == 1
    order = [page.locator(sel).first.bounding_box()["y"] for sel in (
        "h1", ".kv-intro", ".kv-nav", ".kv-node-fragmentation", ".kv-summary", ".kv-next", ".kv-recording")]
    assert order == sorted(order)
    expect(page.locator(".kv-next")).to_contain_text("quantization")
    assert page.locator('link[rel="icon"]').get_attribute("href").startswith("data:")


def _live_explain(query: str = ""):
    """Explain it back's state in the live lesson, at a link's states."""
    from urllib.parse import parse_qs

    from kvviz.lesson import Lesson

    return Lesson(parse_qs(query.lstrip("?"))).states["explain"]


def test_explain_it_back_is_on_the_page_and_a_hand_in_keeps_everything(page, recorded, served):
    """Explain it back on / (issue 28 items 3 and 9): its self-checks ask about the runs the nodes
    show and answer with the engine's recorded outcome, word for word as the live lesson; the hand-in
    holds the predictions, the self-check and the answer; a second hand-in loses none of them."""
    from kvviz.handin.storage import Store

    live = _live_explain("?reserve=12")
    question, truth = live.question("gap_after_free"), live.engine_answer("gap_after_free")
    live.check("gap_after_free", str(truth))
    expected = live.feedback["gap_after_free"]

    traffic = open_lesson(page, recorded, "?reserve=12")
    page.wait_for_function("document.documentElement.dataset.kvReadyExplain === '1'")
    radix_box = page.locator('.kv-recorded-radix').get_by_placeholder("a whole number")
    radix_box.fill("18")
    radix_box.press("Enter")
    page.get_by_role("checkbox", name="Prefix sharing").check()
    expect(page.locator('.kv-predict-note[data-node="radix"]')).to_contain_text("Right")
    sent = len(traffic["requests"])
    expect(page.locator('.kv-question[data-check="gap_after_free"]')).to_have_text(question)
    expect(page.locator(".kv-facts")).to_contain_text("withheld")
    box = page.locator(".kv-recorded-explain").get_by_placeholder("a whole number").first
    box.fill(str(truth))
    box.press("Enter")
    expect(page.locator('.kv-feedback[data-check="gap_after_free"]')).to_have_text(expected)
    assert traffic["requests"][sent:] == []  # (answered from the recording)
    page.locator(".kv-recorded-explain textarea").fill("Paging borrows virtual memory's pages.")
    name = "Ada played explain"
    end = page.get_by_role("region", name="Hand in")
    end.locator(".kv-handin-name").fill(name)
    end.get_by_role("button", name="Hand in", exact=True).click()
    expect(end.locator(".kv-handin-status")).to_contain_text("Your teacher can see it now")
    stored = [h for h in Store(str(served.db)).handins() if h.name == name]
    assert len(stored) == 1
    assert [p.predicted for p in stored[0].predictions] == ["18"]
    assert [(c.key, c.typed, c.right) for c in stored[0].checks] == [("gap_after_free", str(truth), True)]
    assert stored[0].answer == "Paging borrows virtual memory's pages."
    # A second hand-in (the answer box emptied) adds to the first: nothing is lost.
    page.locator(".kv-recorded-explain textarea").fill("")
    # (the server takes one hand-in per student every 3 s: at once, it says to wait, and keeps the first)
    button, status = end.get_by_role("button", name="Hand in", exact=True), end.locator(".kv-handin-status")
    button.click()
    expect(status).to_contain_text("Handed in a moment ago: wait")
    assert [h.answer for h in Store(str(served.db)).handins() if h.name == name] == [stored[0].answer]
    page.wait_for_timeout(RateLimit().gap_s * 1000)  # (the gap the refusal named, from its answer on)
    button.click()
    expect(status).to_contain_text("hand-in 2")
    again = [h for h in Store(str(served.db)).handins() if h.name == name]
    assert len(again) == 1 and again[0].answer == stored[0].answer
    assert len(again[0].predictions) == 1 and len(again[0].checks) == 1
    # (the browser logs the refused request, a 429, as an error: that one and no other)
    assert len(page.kv_errors) == 1 and "status of 429" in page.kv_errors[0]


def test_add_request_at_a_step_before_the_runs_end_is_added_there_as_live(page, recorded):
    """Step back, then Add request: the live lesson adds it at that step; no recording holds
    that, so the server's engine runs it from there (one request), and the page shows its steps."""
    from kvviz.nodes.paging.state import PagingState

    live = PagingState()
    live.step_back()
    live.add_request(settle=True)
    traffic = open_lesson(page, recorded)
    page.locator(".kv-recorded-paging").get_by_role("button", name="◀ Step back").click()
    page.locator(".kv-recorded-paging").get_by_role("button", name="Add request").click()
    expect(page.locator('.kv-step[data-node="paging"] b')).to_have_text(str(live.step_count), timeout=LIVE_MS)
    asked = [u for u in traffic["requests"] if "/lesson-live?" in u]
    assert len(asked) == 1 and "to=" in asked[0] and "act=do-add_request" in asked[0]


def test_a_link_to_explain_it_back_opens_the_recorded_lesson_there_with_its_state(page, recorded):
    """`/?node=explain` (the card's and a course page's link): the whole recorded lesson, at
    Explain it back, the link's state kept (not the live /app)."""
    page.goto(recorded + "?node=explain&reserve=12")
    expect(page).to_have_url(re.compile(r"/lesson/\?reserve=12#explain$"))
    for key in ("Fragmentation", "Paging", "Radix"):
        page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'")
    expect(page.locator(".kv-node-explain").first).to_be_in_viewport(timeout=15_000)
    # (scrolled there, past node 01)
    expect(page.locator(".kv-node-fragmentation").first).not_to_be_in_viewport()
    assert "reserve=12" in page.url
