"""Each picture teaches its claim (issue 11), in headless Chromium: separate holes drawn apart,
a refusal as the headline, both costs of the reserved length, block tables in the strip's
language, feedback next to its control, no clutter, what the kernel read, and the way through
the lesson. Figures are checked on their data (BokehJS's models), not on pixels."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tools.browser import settled

pytestmark = pytest.mark.ui


def metric(page, label: str, node: str | None = None):
    scope = f'[data-node="{node}"]' if node else ""
    return page.locator(f'.kv-metric{scope}[data-label="{label}"] .kv-value')


# The rows of the source holding a strip's free-run boxes ("gaps"), as drawn on a wide screen
# (x, y, width) and on a narrow one; padding rows (NaN, sent as null) left out.
GAPS_JS = """() => {
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    if (m.type !== "ColumnDataSource" || !("text_n" in m.data)) continue;
    const d = m.data, rows = (s) => [...d["x" + s]].map((x, i) => [x, d["y" + s][i], d["width" + s][i], d["text" + s][i]])
      .filter((r) => r[0] !== null && !Number.isNaN(r[0]));
    return {wide: rows(""), narrow: rows("_n")};
  }
  return null;
}"""  # noqa: E501 (data: a string kept as written)

# Which cells of each block strip glow (read by the last step) and their hover text.
READS_JS = """() => [...Bokeh.documents].flatMap((d) => [...d.all_models])
  .filter((m) => m.type === "ColumnDataSource" && "reads" in m.data)
  .map((m) => [...m.data.read].map((r, i) => [r, m.data.reads[i], m.data.label[i]]).filter((c) => c[0] > 0))"""  # noqa: E501 (data: a string kept as written)


def test_after_free_r2_the_two_holes_are_drawn_apart_and_the_refusal_is_the_headline(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    page.get_by_role("button", name="Free R2").click()
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 16 free")
    headline = page.locator(".kv-headline")
    expect(headline).to_contain_text("R4 refused:")
    expect(headline).to_contain_text("external fragmentation")
    assert float(headline.evaluate("el => getComputedStyle(el).fontSize").removesuffix("px")) >= 20
    settled(page)  # (the strip redrawn with the freed blocks)
    gaps = page.evaluate(GAPS_JS)
    # One row of 32 blocks: two boxes, one per hole, with R3's slab (blocks 16-23) between them.
    assert sorted(gaps["wide"]) == [[12, 0.5, 7.96, "8 free"], [28, 0.5, 7.96, "8 free"]]
    # Rows of 8 (a phone): the holes are rows 1 and 3, with R3's row between them.
    assert sorted((y, text) for _, y, _, text in gaps["narrow"]) == [(1.5, "8 free"), (3.5, "8 free")]
    assert page.kv_errors == []


def test_the_reserved_length_shows_both_costs_too_short_cuts_replies_off(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation&reserve=3")
    expect(metric(page, "CUT OFF")).to_have_text("3 of 3")
    expect(metric(page, "RESERVED · EMPTY")).to_have_text("0 blk")
    r1 = page.locator('.kv-requests tr[data-request="R1"] .kv-status')
    expect(r1).to_contain_text("stopped")
    expect(r1).to_contain_text("its reserved slab of 3 blocks is full")
    page.goto(f"{lesson_url}?node=fragmentation&reserve=9")
    expect(metric(page, "CUT OFF")).to_have_text("0 of 3")
    expect(metric(page, "RESERVED · EMPTY")).to_have_text("15 blk")  # too long: locked for nothing
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")  # the same tokens, as the text says
    expect(page.locator(".kv-try")).to_contain_text("IN USE stays where it is")


def test_a_refused_prompt_says_so_next_to_the_button_and_the_box_stops_at_200(page, lesson_url):
    page.goto(f"{lesson_url}?node=paging")
    box = page.get_by_role("textbox").first
    box.fill("")
    page.get_by_role("button", name="Add request").click()
    notice = page.locator(".kv-notice")
    expect(notice).to_contain_text("the box is empty")
    expect(notice).to_have_class(re.compile("kv-warning"))
    button, said = page.get_by_role("button", name="Add request").bounding_box(), notice.bounding_box()
    assert 0 <= said["y"] - (button["y"] + button["height"]) < 80  # right under the control
    box.type("x" * 250)
    assert len(box.input_value()) == 200


def test_after_eight_adds_both_pools_and_their_cards_fit_one_laptop_screen(page, lesson_url):
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{lesson_url}?node=paging&" + "&".join(["add=Memory%20is"] * 8))
    expect(metric(page, "NAIVE REJECTS")).not_to_have_text("0")
    settled(page)
    # (its first figure)
    contiguous, cards = page.locator(".bk-Figure").first, page.locator(".kv-cards").first
    top = contiguous.bounding_box()["y"]
    assert cards.bounding_box()["y"] + cards.bounding_box()["height"] - top <= 768
    assert page.locator('.kv-node-paging .kv-requests').count() == 1  # one list, both pools' statuses
    why = page.locator(".kv-why li")
    expect(why).to_have_count(1)  # the refusals, counted on one line
    expect(why).to_contain_text(re.compile(r"^\d+ requests refused by the contiguous pool"))


# The transport's buttons (Bokeh models) that carry a description, which Bokeh shows as a tooltip.
DESCRIBED_JS = """() => [...Bokeh.documents].flatMap((d) => [...d.all_models])
  .filter((m) => m.type === "Button" && ["⟲ Rewind", "◀ Step back", "Step ▶", "▶ Play"].includes(m.label)
    && (m.description != null || m.tooltip != null)).map((m) => m.label)"""


def test_quiet_feedback_no_tooltips_on_the_transport_and_each_node_its_own_legend(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    # No tooltips (they covered the neighbouring buttons): no transport button has a description,
    # and none shows while hovered, once the hover has reached it.
    assert page.evaluate(DESCRIBED_JS) == []
    page.get_by_role("button", name="Step ▶").hover()
    page.wait_for_function("(el) => el.matches(':hover')",
                           arg=page.get_by_role("button", name="Step ▶").element_handle())
    expect(page.locator(".bk-tooltip")).to_have_count(0)
    page.get_by_role("button", name="Step ▶").click()
    notice = page.locator(".kv-notice")
    expect(notice).to_contain_text("Nothing left to run")
    expect(notice).to_have_class(re.compile("kv-info"))  # information, not a warning
    cues = page.locator(".kv-legend [data-cue]").evaluate_all("els => els.map((e) => e.dataset.cue)")
    assert "gap" in cues and "shared" not in cues and "cached" not in cues


def test_release_oldest_with_nothing_left_says_why_and_leaves_are_in_their_requests_colours(page, lesson_url):
    page.goto(f"{lesson_url}?node=radix&sharing=1" + "&op=release" * 4)
    page.get_by_role("button", name="Release oldest").click()
    expect(page.locator(".kv-notice")).to_contain_text("every request is released already")
    page.goto(f"{lesson_url}?node=radix&sharing=1")
    expect(metric(page, "SAVED")).to_have_text("50%")
    settled(page)
    (nodes,) = page.evaluate("""() => [...Bokeh.documents].flatMap((d) => [...d.all_models])
      .filter((m) => m.type === "ColumnDataSource" && "sub" in m.data)
      .map((m) => [...m.data.x].map((x, i) => [x, m.data.fill[i]]).filter((n) => n[0] !== null && !Number.isNaN(n[0])))""")  # noqa: E501 (data: a string kept as written)
    # the root, the shared trunk in the strip's shared grey, each request's branch in its colour
    assert sorted(nodes) == [[0, "#444444"], [1, "#8a8a8a"],
                             *sorted([[2, c] for c in ("#E69F00", "#56B4E9", "#009E73", "#F0E442")])]


def test_stepping_lights_the_blocks_the_kernel_read_shared_ones_by_every_reader(page, lesson_url):
    page.goto(f"{lesson_url}?node=radix&sharing=1")
    expect(metric(page, "SAVED")).to_have_text("50%")
    assert page.evaluate(READS_JS) == [[]]  # not stepping: nothing lit
    page.get_by_role("button", name="⟲ Rewind").click()
    expect(page.locator(".kv-step")).to_contain_text("step 0 ")
    for n in range(1, 4):  # prefill (no cache read by the decode kernel), then two decode steps
        page.get_by_role("button", name="Step ▶").click()
        expect(page.locator(".kv-step")).to_contain_text(f"step {n} ")
    expect(page.locator(".kv-reads")).to_contain_text("the attention kernel read")
    settled(page)  # (the strip redrawn with the lit blocks)
    (lit,) = page.evaluate(READS_JS)
    shared = [c for c in lit if c[2] == "×4"]
    assert len(shared) == 6  # the system prompt's blocks, held once ...
    assert all(c[1].count("via its page") == 4 for c in shared)  # ... read by all four requests


def test_back_and_continue_links_follow_the_lessons_order(page, lesson_url):
    page.goto(f"{lesson_url}?node=paging")
    expect(page.locator(".kv-steps a.kv-back")).to_contain_text("01 · Fragmentation")
    page.locator(".kv-steps a.kv-continue").click()  # a node alone: its neighbour's page
    expect(page).to_have_url(re.compile(r"\?node=radix$"))
    page.goto(lesson_url)
    page.locator('.kv-node-fragmentation .kv-steps a.kv-continue').click()  # the full page: scroll to it
    expect(metric(page, "NAIVE REJECTS")).to_have_text("0")
    # the page holds still, node 02 drawn, with node 02 at the top
    settled(page,
            "() => Math.abs(document.querySelector('.kv-node-paging').getBoundingClientRect().top) < 80")
    page.locator(".kv-summary").scroll_into_view_if_needed()
    expect(page.locator(".kv-summary")).to_contain_text("the three ideas")


def test_the_explain_node_alone_does_not_point_above_and_its_download_looks_active(page, lesson_url):
    page.goto(f"{lesson_url}?node=explain")
    expect(page.locator(".kv-node-explain .kv-prose").first).not_to_contain_text("above")
    button = page.locator(".kv-download .bk-btn")
    assert button.evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(0, 115, 77)"
