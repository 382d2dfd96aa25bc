"""Issue 28 item 7, what the same walk found besides, on both pages: the played lesson (`/`) and
the live one (`/app`), each fix tested on each. Node 02's OS analogy is a card; its strips come
right under its heading; the radix tree's labels fit their boxes and tell the four questions
apart on a phone, and "lock n" is explained; a locked prediction goes, in words, when the slider
rewrites its question; the chosen answer shows pressed; `/` offers the hand-in under a verdict."""

from __future__ import annotations

import re

import pytest
from phone_checks import PHONE
from playwright.sync_api import expect

from kvviz.state import predict
from tools.browser import settled

pytestmark = pytest.mark.ui
LAPTOP = {"width": 1366, "height": 768}
PAGES = ("played", "live")


@pytest.fixture(scope="module")
def recorded(served):
    served.wait_for_recordings()
    return served.base


def open_page(page, which: str, served, node: str, query: str = "") -> None:
    """`/` (every node registered with the player) or `/app?node=<node>` (that node, live)."""
    if which == "played":
        page.goto(served.base + (f"?{query}" if query else ""))
        for key in ("Fragmentation", "Paging", "Radix"):
            page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'")
    else:
        page.goto(f"{served.url}?node={node}" + (f"&{query}" if query else ""))
        page.locator(f'.kv-metric[data-node="{node}"]').first.wait_for()
    settled(page)


def note(page, node: str):
    return page.locator(f'.kv-predict-note[data-node="{node}"]')


@pytest.mark.parametrize("which", PAGES)
def test_node_02_shows_its_strips_right_under_its_heading_and_its_analogy_as_a_card(page, recorded, served,
                                                                                    which):
    page.set_viewport_size(LAPTOP)
    open_page(page, which, served, "paging")
    heading = page.locator(".kv-node-paging .kv-heading h2").first
    heading.scroll_into_view_if_needed()
    settled(page)
    top = heading.bounding_box()
    strip = page.locator(".kv-node-paging .kv-strip-box").first.bounding_box()
    assert 0 <= strip["y"] - (top["y"] + top["height"]) <= 150  # (was ~440 px of text and controls)
    card = page.locator(".kv-node-paging .kv-analogy").first
    expect(card).to_be_visible()
    expect(card).to_contain_text("OS analogy · virtual memory", ignore_case=True)
    expect(card).to_contain_text("The KV cache gets a page table")
    expect(card.get_by_text("the OS page table quietly maps")).to_be_visible()  # (not folded in a <details>)
    # The same order on both pages: picture, controls, prediction, analogy, the block table.
    ys = [page.locator(sel).first.bounding_box()["y"] for sel in (
        ".kv-node-paging .kv-heading", ".kv-node-paging .kv-strip-box", ".kv-node-paging .kv-predict",
        ".kv-node-paging .kv-analogy", ".kv-pagetable-text")]
    assert ys == sorted(ys)
    add = page.get_by_role("button", name="Add request").first.bounding_box()
    assert strip["y"] < add["y"] < ys[2]


@pytest.mark.parametrize("which", PAGES)
def test_on_a_phone_node_02_shows_its_heading_then_its_strips_and_their_legend(browser, recorded, served,
                                                                               which):
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, which, served, "paging")
        page.locator(".kv-node-paging .kv-heading").first.scroll_into_view_if_needed()
        settled(page)
        heading, strips, legend, lead = (page.locator(f".kv-node-paging {sel}") for sel in (
            ".kv-heading h2", ".kv-strip-box", ".kv-legend-box", ".kv-lead"))
        top = heading.first.bounding_box()
        assert 0 <= strips.first.bounding_box()["y"] - (top["y"] + top["height"]) <= 60
        assert (strips.nth(1).bounding_box()["y"] < legend.first.bounding_box()["y"]
                < lead.first.bounding_box()["y"])
    finally:
        context.close()


@pytest.mark.parametrize("which", PAGES)
def test_on_a_phone_the_radix_trees_four_branches_read_differently_and_lock_n_is_explained(browser, recorded,
                                                                                           served, which):
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, which, served, "radix", "sharing=1")
        page.locator(".kv-tree").first.scroll_into_view_if_needed()
        settled(page)
        labels = page.evaluate("""() => {
          for (const doc of Bokeh.documents) for (const m of doc.all_models) {
            if (m.type !== "Figure" || !(m.css_classes || []).includes("kv-tree")) continue;
            const text = m.renderers.find((r) => r.glyph.type === "Text" && r.glyph.text.field.startsWith("label"));
            const data = text.data_source.data, field = text.glyph.text.field;
            return {field, branches: Array.from(data[field]).filter((_t, i) => data.x[i] === 2)};
          }
        }""")  # noqa: E501 (data: a string kept as written)
        assert labels["field"] == "label_n"  # (the phone's layout)
        assert len(labels["branches"]) == 4 and len(set(labels["branches"])) == 4, labels
        assert not any(b.startswith("Q: What") for b in labels["branches"])
        explained = page.locator(".kv-figure-note").first
        expect(explained).to_be_visible()
        expect(explained).to_contain_text("lock n: how many live requests use it")
    finally:
        context.close()


@pytest.mark.parametrize("which", PAGES)
def test_a_locked_prediction_goes_when_the_slider_rewrites_its_question_and_the_choice_shows_pressed(
        page, recorded, served, which):
    open_page(page, which, served, "fragmentation")
    refused = page.get_by_role("button", name="Predict: refused").first
    admitted = page.get_by_role("button", name="Predict: admitted").first
    expect(refused).to_have_attribute("aria-pressed", "false")
    refused.click()
    expect(note(page, "fragmentation")).to_contain_text("Locked in: refused.")
    expect(refused).to_have_attribute("aria-pressed", "true")  # pressed: said, and drawn
    expect(admitted).to_have_attribute("aria-pressed", "false")
    fill = refused.evaluate("(b) => getComputedStyle(b).backgroundColor")
    assert fill != admitted.evaluate("(b) => getComputedStyle(b).backgroundColor")
    page.get_by_role("slider", name=re.compile("Reserved length")).first.press("ArrowUp")
    expect(page.locator(".kv-predict-question").first).to_contain_text("with 9-block slabs")
    expect(note(page, "fragmentation")).to_have_text(predict.CLEARED.format(predicted="refused"))
    expect(refused).to_have_attribute("aria-pressed", "false")
    page.get_by_role("button", name="Free R2").first.click()  # nothing locked in: no verdict
    expect(note(page, "fragmentation")).not_to_contain_text("You predicted")
    assert page.kv_errors == []


def test_the_played_page_offers_the_hand_in_under_an_answered_prediction(page, recorded, served):
    """As the live page does (tests/ui/test_handin.py): the page's own hand-in box, under the verdict."""
    from kvviz.handin.storage import Store

    open_page(page, "played", served, "fragmentation")
    panel = page.locator(".kv-node-fragmentation .kv-predict").first
    expect(panel.locator(".kv-handin-played")).to_have_count(0)  # (nothing answered yet)
    page.get_by_role("button", name="Predict: refused").first.click()
    page.get_by_role("button", name="Free R2").first.click()
    expect(note(page, "fragmentation")).to_contain_text("You predicted refused; the engine: refused.")
    box = panel.locator(".kv-handin-played")
    expect(box).to_be_visible()
    box.locator(".kv-handin-name").fill("Under the verdict")
    box.get_by_role("button", name="Hand in", exact=True).click()
    expect(box.locator(".kv-handin-status")).to_contain_text("Your teacher can see it now")
    stored = [h for h in Store(str(served.db)).handins() if h.name == "Under the verdict"]
    assert (len(stored) == 1
            and [(p.predicted, p.outcome) for p in stored[0].predictions] == [("refused", "refused")])
    page.get_by_role("button", name="Reset").first.click()  # a fresh start: the verdict and its box go
    expect(panel.locator(".kv-handin-played")).to_have_count(0)
    assert page.kv_errors == []
