"""The lesson on a projector (1920×1080): every control, card value, headline and figure text
(drawn on canvas or in HTML) at 18 px or more, so it reads from the back of a room; Prefix
sharing is a large labelled switch."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tools.browser import settled

pytestmark = pytest.mark.ui

READABLE = ("button", "input:not([type=checkbox])", "select", "textarea", ".bk-slider-title",
            ".bk-input-group > label", ".kv-value", "h2", ".kv-headline", ".kv-predict-question", ".kv-step",
            ".kv-label", ".bk-label", "summary", ".kv-figure-title", ".kv-legend span", ".kv-note",
            ".kv-events", ".kv-tails", ".kv-reads")

# (selector, font size, text) of every visible element matching one of the selectors, in shadow roots too.
SIZES_JS = """(selectors) => {
  const out = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll(selectors.join(","))) {
      const r = el.getBoundingClientRect();
      if (r.width && r.height) out.push([parseFloat(getComputedStyle(el).fontSize), (el.textContent || el.value || el.placeholder || "").trim().slice(0, 40)]);
    }
    for (const el of root.querySelectorAll("*")) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  return out;
}"""  # noqa: E501 (data: a string kept as written)

# (font size, what) of every text drawn on the canvas of a figure on screen (a hidden one has no
# width yet): its title, its text glyphs (cell labels, hole lengths, tree labels), its axes' labels.
FIGURE_TEXT_JS = """() => {
  const val = (v) => (v !== null && typeof v === "object" && "value" in v) ? v.value : v;
  const out = [];
  for (const m of [...Bokeh.documents].flatMap((d) => [...d.all_models])) {
    if (m.type !== "Figure" || !(m.inner_width > 0)) continue;
    if (m.title && m.title.text) out.push([val(m.title.text_font_size), m.title.text]);
    for (const r of m.renderers) if (r.glyph && r.glyph.type === "Text" && r.visible)
      out.push([val(r.glyph.text_font_size), "text glyph"]);
    for (const a of [...m.left, ...m.below]) if (a.visible && a.major_label_text_font_size)
      out.push([val(a.major_label_text_font_size), "axis"]);
  }
  return out;
}"""


def figure_texts(page) -> list:
    return page.evaluate(FIGURE_TEXT_JS)


@pytest.fixture
def projector(page):
    page.set_viewport_size({"width": 1920, "height": 1080})
    return page


@pytest.mark.parametrize("node", ["fragmentation", "paging", "radix"])
def test_controls_card_values_and_headlines_are_18px_or_more_on_a_projector(projector, lesson_url, node):
    projector.goto(f"{lesson_url}?node={node}")
    projector.locator(".kv-keyboard").wait_for(state="attached")
    settled(projector)
    sizes = projector.evaluate(SIZES_JS, list(READABLE))
    assert len(sizes) > 10
    assert [s for s in sizes if s[0] < 18] == []
    drawn = figure_texts(projector)
    assert len(drawn) >= 1  # (the cells' labels at least)
    assert [t for t in drawn if float(t[0].removesuffix("px")) < 18] == []
    assert projector.kv_errors == []


def test_prefix_sharing_is_a_large_switch_that_says_its_state(projector, lesson_url):
    projector.goto(f"{lesson_url}?node=radix")
    switch = projector.get_by_role("checkbox", name="Prefix sharing")
    box = switch.bounding_box()
    assert box["width"] >= 48 and box["height"] >= 28
    label = projector.locator(".kv-sharing .bk-label")
    assert projector.evaluate("(el) => getComputedStyle(el, '::after').content",
                              label.element_handle()) == '": off"'
    switch.click()
    expect(projector.locator('.kv-metric[data-label="SAVED"] .kv-value')).to_have_text("50%")
    assert projector.evaluate("(el) => getComputedStyle(el, '::after').content",
                              label.element_handle()) == '": on"'
    settled(projector)  # the radix tree, shown now, takes the projector's sizes too
    drawn = figure_texts(projector)
    assert len(drawn) >= 3 and [t for t in drawn if float(t[0].removesuffix("px")) < 18] == []
    title = projector.get_by_text("Radix tree of cached prefixes")
    expect(title).to_be_visible()
    assert float(title.evaluate("(el) => parseFloat(getComputedStyle(el).fontSize)")) >= 18
