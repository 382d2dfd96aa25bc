"""The lesson on a phone (390×844, is_mobile: the browser honours the viewport tag as a phone
does): laid out at the phone's own width, body text ≥ 14 px, no sideways scrolling, and block
strips and block tables reflowed to rows of eight whose labels fit their cells."""

from __future__ import annotations

import pytest
from phone_checks import FIT_JS, PHONE
from playwright.sync_api import expect

from tools.browser import settled

pytestmark = pytest.mark.ui


# The lesson's own parts of the page: the nodes of this issue, the intro and the closing summary.
OURS = ("kv-node-fragmentation", "kv-node-paging", "kv-node-radix", "kv-node-explain", "kv-intro",
        "kv-summary")

# Every visible element with text of its own, inside one of `roots` (elements with those classes,
# shadow roots included), whose font is smaller than `min_px`; figures draw on canvas and are
# checked through their models instead.
SMALL_TEXT_JS = """([min_px, roots]) => {
  const small = [];
  const check = (el) => {
    if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) return;
    const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    if (!r.width || !r.height || cs.visibility === "hidden") return;
    if (parseFloat(cs.fontSize) < min_px) small.push(cs.fontSize + " " + el.textContent.trim().slice(0, 40));
  };
  const inside = (root) => {
    for (const el of root.querySelectorAll("*")) { check(el); if (el.shadowRoot) inside(el.shadowRoot); }
  };
  const find = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (roots.some((c) => el.classList.contains(c))) { check(el); inside(el); if (el.shadowRoot) inside(el.shadowRoot); }
      else if (el.shadowRoot) find(el.shadowRoot);
    }
  };
  find(document);
  return small;
}"""  # noqa: E501 (data: a string kept as written)

# The block figures (strips, page tables): cells per row now, and a cell's width in pixels.
FIGURES_JS = """() => {
  const out = [];
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    if (m.type !== "Figure" || !m.renderers.some((r) => "x_n" in r.data_source.data)) continue;
    out.push({per_row: m.x_range.end - m.x_range.start, width: m.inner_width});
  }
  return out;
}"""


@pytest.fixture
def phone(browser):
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.kv_errors = []
    page.on("console", lambda m: page.kv_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.kv_errors.append(str(e)))
    page.set_default_timeout(60_000)
    yield page
    context.close()


def settle(page):
    page.locator(".kv-keyboard").wait_for(state="attached")
    settled(page)  # (the figures reflow once their width is known)


@pytest.mark.parametrize("node", ["fragmentation", "paging", "radix", "explain"])
def test_a_node_on_a_phone_is_laid_out_at_the_phones_width_with_readable_text(phone, lesson_url, node):
    phone.goto(f"{lesson_url}?node={node}")
    settle(phone)
    assert phone.evaluate("window.innerWidth") == 390  # not a 980 px page shrunk to fit
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    assert phone.evaluate(SMALL_TEXT_JS, [14, list(OURS)]) == []
    assert phone.kv_errors == []


def test_the_full_page_on_a_phone_has_the_viewport_tag_and_no_sideways_scroll(phone, lesson_url):
    phone.goto(lesson_url)
    settle(phone)
    assert phone.locator('meta[name="viewport"]').get_attribute("content") == (
        "width=device-width, initial-scale=1")
    assert phone.evaluate("window.innerWidth") == 390
    phone.locator(".kv-node-radix").first.scroll_into_view_if_needed()
    expect(phone.locator('.kv-metric[data-node="radix"][data-label="SAVED"] .kv-value')).to_have_text("0%")
    settled(phone)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    assert phone.evaluate(SMALL_TEXT_JS, [14, list(OURS)]) == []


@pytest.mark.parametrize("node, count", [("fragmentation", 1), ("paging", 4)])
def test_strips_and_block_tables_reflow_to_rows_of_eight_whose_labels_fit(phone, lesson_url, node, count):
    phone.goto(f"{lesson_url}?node={node}")
    settle(phone)
    figures = phone.evaluate(FIGURES_JS)
    assert len(figures) == count
    for fig in figures:
        assert fig["per_row"] == 8
        assert 0.9 * fig["width"] / 8 >= 36  # a cell holds its bold 12 px label ("R12", "×4") with room


def test_the_hand_in_under_a_resolved_prediction_fits_a_phone(phone, lesson_url):
    phone.goto(f"{lesson_url}?node=fragmentation")
    settle(phone)
    phone.get_by_role("button", name="Predict: admitted").click()
    phone.get_by_role("button", name="Free R2").click()
    row = phone.locator(".kv-predict .kv-handin-row")
    expect(row.get_by_role("button", name="Hand in to the teacher")).to_be_visible()
    settled(phone)
    box = row.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    assert phone.evaluate(SMALL_TEXT_JS, [14, list(OURS)]) == []
    assert phone.kv_errors == []


# Every control a finger can hit, smaller than 44×44 px: buttons, text boxes, menus, links, the
# <summary> toggles, the slider's handle, and a checkbox (by its label when it has one).
TARGETS_JS = """() => {
  const small = [];
  const seen = new Set();
  const check = (el, box, what) => {
    const r = box.getBoundingClientRect();
    if (!r.width || !r.height || !el.checkVisibility({checkVisibilityCSS: true})) return;
    if (r.height < 44 || r.width < 44) small.push(`${what} ${Math.round(r.width)}x${Math.round(r.height)} ${(el.textContent || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 24)}`);
  };
  const walk = (root) => {
    for (const el of root.querySelectorAll("button, .bk-btn, input, select, textarea, a[href], summary, .noUi-handle")) {
      if (seen.has(el) || el.closest(".bk-btn") && el !== el.closest(".bk-btn")) continue;
      seen.add(el);
      if (el.matches("input[type=checkbox], input[type=radio]")) check(el, el.closest("label") || el, "checkbox");
      else check(el, el, el.tagName.toLowerCase());
    }
    for (const el of root.querySelectorAll("*")) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  return small;
}"""  # noqa: E501 (data: a string kept as written)


@pytest.mark.parametrize("node", ["fragmentation", "paging", "radix", "explain", None])
def test_every_control_is_a_44px_touch_target(phone, lesson_url, node):
    phone.goto(f"{lesson_url}?node={node}" if node else lesson_url)
    settle(phone)
    assert phone.evaluate(TARGETS_JS) == []


@pytest.mark.parametrize("query",
                         ["?node=radix&sharing=1", "?node=radix&sharing=1&op=ask:Why%20is%20the%20sky%20blue",
                                   "?sharing=1"])
def test_radix_tree_labels_stay_in_their_boxes_and_no_figure_title_is_cut_off(phone, lesson_url, query):
    phone.goto(lesson_url + query)
    settle(phone)
    if "node=" not in query:  # the full page: its margins leave the figures narrower still
        phone.locator(".kv-node-radix").first.scroll_into_view_if_needed()
        expect(phone.locator('.kv-metric[data-node="radix"][data-label="SAVED"] .kv-value')).to_have_text(
            "50%")
        settled(phone)
    fit = phone.evaluate(FIT_JS)
    assert fit["checked"] >= 9  # root, trunk and four branches: their labels and block lines
    assert fit["spills"] == [] and fit["clipped"] == []
    for title in phone.locator(".kv-figure-title").all():  # HTML titles wrap inside their figure
        if title.is_visible():
            assert title.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390


# The words of the request lists' texts that a line break cuts in two (a word of 12 letters or
# fewer fits a phone's column whole: it moves to the next line instead).
CUT_WORDS_JS = """() => {
  const cut = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll(".kv-requests .kv-text")) {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        for (const m of n.textContent.matchAll(/[A-Za-z]{2,12}/g)) {
          const r = document.createRange();
          r.setStart(n, m.index);
          r.setEnd(n, m.index + m[0].length);
          if (new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1) cut.push(m[0]);
        }
      }
    }
    for (const el of root.querySelectorAll("*")) if (el.shadowRoot) visit(el.shadowRoot);
  };
  visit(document);
  return cut;
}"""


def test_on_a_phone_the_request_lists_break_their_text_between_words(phone, lesson_url):
    phone.goto(f"{lesson_url}?node=radix")
    settle(phone)
    words = phone.evaluate("""() => { let n = 0; const visit = (root) => {
        for (const el of root.querySelectorAll(".kv-requests .kv-text")) n += el.textContent.split(" ").length;
        for (const el of root.querySelectorAll("*")) if (el.shadowRoot) visit(el.shadowRoot); };
      visit(document); return n; }""")  # noqa: E501 (data: a script kept as written)
    assert words > 40  # (the four questions and their answers, in a column a third of the phone wide)
    assert phone.evaluate(CUT_WORDS_JS) == []


@pytest.mark.parametrize("which", ["played", "live"])
def test_on_a_phone_node_04s_requests_are_cards_whose_words_are_whole(phone, served, which):
    """Node 04's five columns (question, what each engine wrote, the tokens, the cached tokens) cut
    every word on a phone, a column a few letters wide: each request is a card there, its cells
    one under another at the full width, each under its heading."""
    phone.goto(f"{served.base}?node=vllm" if which == "played" else f"{served.url}?node=vllm")
    cells = phone.locator(".kv-exchanges td.kv-gen")
    expect(cells.first).to_be_visible(timeout=60_000)
    settled(phone)
    widths = [c.bounding_box()["width"] for c in cells.all() if c.is_visible()]
    assert len(widths) >= 2 and min(widths) > 300  # (the phone's 390 px, less the page's margins)
    assert cells.first.evaluate("(td) => getComputedStyle(td, '::before').content") == '"vLLM wrote"'
    assert phone.evaluate(CUT_WORDS_JS) == []
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
