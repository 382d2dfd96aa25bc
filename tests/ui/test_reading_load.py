"""How much a student has to read, and what the first screen shows (issue 19).

Words are counted as a student sees them in Chromium: every text the browser lays out inside a
node's section (shadow roots included; a closed <details> shows only its summary), plus the
titles its figures draw on canvas, but not the request table. Each node stays within 1.25× the
words of the same node of the reference lesson (`../shared/seed/kv-cache-lesson.txt`: 214, 263
and 201 words for nodes 01, 02 and 03); what was cut is one click (or Enter) away.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tools.browser import settled

pytestmark = pytest.mark.ui

REFERENCE = {"fragmentation": 214, "paging": 263, "radix": 201}
BUDGET = {key: int(1.25 * words) for key, words in REFERENCE.items()}  # 267, 328, 251

# {section class: [texts shown]} for every node section on the page.
WORDS_JS = """() => {
  const out = {};
  const shown = (node) => {  // a text node the browser lays out (its own boxes)
    if (!node.parentElement.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) return false;
    const range = document.createRange();
    range.selectNodeContents(node);
    return [...range.getClientRects()].some((r) => r.width > 1 && r.height > 1);
  };
  const collect = (root, acc) => {
    for (const n of root.childNodes) {
      if (n.nodeType === 3) {
        if (n.textContent.trim() && shown(n)) acc.push(n.textContent.trim());
      } else if (n.nodeType === 1) {
        if (n.matches(".kv-requests") || ["SCRIPT", "STYLE", "OPTION", "TEMPLATE"].includes(n.tagName)) continue;
        if (n.tagName === "SELECT") {
          if (n.checkVisibility() && n.selectedOptions[0]) acc.push(n.selectedOptions[0].textContent.trim());
          continue;
        }
        if (n.tagName === "DETAILS" && !n.open) {  // closed: only its summary shows
          const summary = n.querySelector(":scope > summary");
          if (summary) collect(summary, acc);
          continue;
        }
        if (n.shadowRoot) collect(n.shadowRoot, acc);
        collect(n, acc);
      }
    }
  };
  const sections = (root, found) => {
    for (const el of root.querySelectorAll("*")) {
      const key = [...el.classList].find((c) => c.startsWith("kv-node-"));
      if (key && !found[key]) found[key] = el;
      if (el.shadowRoot) sections(el.shadowRoot, found);
    }
    return found;
  };
  const inside = (el, section) => {
    for (let n = el; n; n = n.parentNode || n.host) if (n === section) return true;
    return false;
  };
  const titles = new Map();  // a drawn figure's element -> its canvas title
  for (const root of Object.values(Bokeh.index))
    for (const v of root.owner.query((v) => v.model.type === "Figure"))
      if (v.model.title && v.model.title.text && v.el.checkVisibility() && v.el.getBoundingClientRect().width > 1)
        titles.set(v.el, v.model.title.text);
  for (const [key, el] of Object.entries(sections(document, {}))) {
    const acc = [];
    collect(el, acc);
    if (el.shadowRoot) collect(el.shadowRoot, acc);
    for (const [fig, title] of titles) if (inside(fig, el)) acc.push(title);
    out[key.slice("kv-node-".length)] = acc;
  }
  return out;
}"""  # noqa: E501 (data: a string kept as written)


def words(texts: list[str]) -> list[str]:
    return [w for t in texts for w in t.split() if any(c.isalnum() for c in w)]


def node_words(page) -> dict[str, list[str]]:
    return {key: words(texts) for key, texts in page.evaluate(WORDS_JS).items()}


def build_every_node(page, lesson_url: str) -> None:
    page.goto(lesson_url)
    for key in ("paging", "radix"):
        page.locator(f'.kv-nav-vertical a[data-node="{key}"]').click()
        page.locator(f'.kv-metric[data-node="{key}"]').first.wait_for()
    settled(page)  # (the figures reflow once their width is known)


def test_each_node_shows_at_most_one_and_a_quarter_times_the_reference_lessons_words(page, lesson_url):
    page.set_viewport_size({"width": 1366, "height": 768})
    build_every_node(page, lesson_url)
    counted = node_words(page)
    for key, budget in BUDGET.items():
        assert 60 < len(counted[key]) <= budget, (key, len(counted[key]), " ".join(counted[key]))
    # Counted as shown: node 01's strip title (canvas or HTML), its cards' labels; not the request table's
    # text.
    assert "address" in counted["fragmentation"] and "GAP" in counted["fragmentation"]
    assert "finished" not in counted["fragmentation"] and "generated" not in counted["radix"]


def test_opening_a_details_toggle_shows_more_words_and_the_keyboard_opens_it(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    page.locator(".kv-keyboard").wait_for(state="attached")
    settled(page)  # (a card drawn again after the summary is focused would take the focus with it)
    before = len(node_words(page)["fragmentation"])
    counts = page.locator('.kv-metric[data-label="IN USE"] .kv-counts')
    expect(counts).to_be_hidden()
    summary = page.locator('summary[aria-label="What IN USE counts"]')
    # Focus and Enter, up to three times: a card drawn again by a late server message (CI's load
    # delays them past `settled`) is a new, closed <details>. Enter that never opens it fails all three.
    for attempt in range(3):
        summary.focus()
        page.keyboard.press("Enter")
        try:
            expect(counts).to_be_visible(timeout=5_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    expect(counts).to_have_text("Blocks holding at least one token, of all blocks in the pool.")
    page.get_by_text("Why? The four steps").click()
    expect(page.get_by_text("external fragmentation").last).to_be_visible()
    after = len(node_words(page)["fragmentation"])
    assert after > before + 60  # the cut text is all there, one click away


def _bottom(page, locator) -> float:
    box = locator.bounding_box()
    assert box is not None and box["height"] > 0
    return box["y"] + box["height"]


def test_at_1366_by_768_the_first_screen_shows_node_01s_strip_and_its_first_control(page, lesson_url):
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(lesson_url)
    page.locator(".kv-keyboard").wait_for(state="attached")
    settled(page)
    assert page.evaluate("window.scrollY") == 0
    strip = page.locator(".kv-node-fragmentation .kv-strip-box").first
    slider = page.get_by_role("slider", name="Reserved length")
    assert _bottom(page, strip) <= 768 and _bottom(page, slider) <= 768
    assert strip.bounding_box()["y"] > 0


def test_on_a_phone_the_first_screen_shows_the_title_a_sentence_and_the_strip(browser, lesson_url):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(lesson_url)
        page.locator(".kv-keyboard").wait_for(state="attached")
        settled(page)
        title = page.locator("#header").get_by_text("Managing the KV cache")
        sentence = page.locator(".kv-intro p").first
        strip = page.locator(".kv-node-fragmentation .kv-strip-box").first
        expect(sentence).to_contain_text("KV cache")
        for part in (title, sentence, strip):
            assert _bottom(page, part) <= 844, part
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()
