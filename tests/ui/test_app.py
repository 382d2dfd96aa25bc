"""The served lesson in headless Chromium: it loads cleanly and shows the lesson's figures.

Metric values are read through the selectors documented in kvviz/metric_card.py. Set
KVVIZ_SCREENSHOT=/path/to.png to save a picture of the loaded lesson (1400×2000).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tools.browser import settled

pytestmark = pytest.mark.ui


def metric(page, label: str, node: str | None = None):
    scope = f'[data-node="{node}"]' if node else ""
    return page.locator(f'.kv-metric{scope}[data-label="{label}"] .kv-value')


def test_full_page_loads_with_the_default_figures_and_no_errors(page, lesson_url):
    page.goto(lesson_url)
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")
    expect(metric(page, "RESERVED · EMPTY")).to_have_text("12 blk")
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 8 free")
    expect(page.get_by_text("Managing the KV cache").first).to_be_visible()
    expect(page.locator(".kv-badge").first).to_have_text(re.compile(r"engine: \w+ · (CPU|CUDA)"))
    # Nodes far below are built only when the student gets near them (kvviz/web/lazy.py).
    expect(page.locator(".kv-node-explain .kv-slot-waiting")).to_have_count(1)
    expect(page.locator('.kv-metric[data-node="radix"]')).to_have_count(0)
    # (each node from the navigation: a jump may pass a node too fast for it to be built on the way)
    page.locator('.kv-nav-vertical a[data-node="paging"]').click()
    expect(metric(page, "NAIVE REJECTS")).to_have_text("0")
    expect(metric(page, "CONTIGUOUS")).to_have_text(re.compile(r"^\d+% full$"))
    page.locator('.kv-nav-vertical a[data-node="radix"]').click()
    expect(metric(page, "BLOCKS STORED")).to_have_text("36 blk")
    expect(metric(page, "vs NO SHARING")).to_have_text("36 blk")
    expect(metric(page, "SAVED")).to_have_text("0%")
    # The navigation settles on its target although the nodes passed on the way grew: the page
    # holds still (every node above it drawn) with the target at the top.
    settled(page, "() => Math.abs(document.querySelector('.kv-node-radix').getBoundingClientRect().top) < 80")
    assert "Traceback" not in page.content()
    assert page.kv_errors == []
    if shot := os.environ.get("KVVIZ_SCREENSHOT"):  # e.g. the README's picture
        page.evaluate("window.scrollTo(0, 0)")
        page.set_viewport_size({"width": 1400, "height": 2000})
        settled(page)
        page.screenshot(path=shot)


def test_a_node_scrolled_to_is_built_and_restored_from_the_link(page, lesson_url):
    page.goto(f"{lesson_url}?sharing=1")
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")
    page.locator(".kv-node-radix").first.scroll_into_view_if_needed()
    expect(metric(page, "SAVED", "radix")).to_have_text("50%")
    expect(metric(page, "BLOCKS STORED", "radix")).to_have_text("18 blk")
    assert page.kv_errors == []


def test_reserve_1_says_all_three_are_refused_and_turns_free_r2_off_with_the_reason(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation&reserve=1")
    expect(page.locator(".kv-headline")).to_contain_text("All 3 requests refused (R1, R2, R3).")
    expect(page.get_by_role("button", name="Free R2")).to_be_disabled()
    expect(page.locator(".kv-off")).to_contain_text("R2 holds no slab to free")
    expect(page.locator(".kv-predict-question")).to_be_hidden()  # no question about an R2 that never ran
    expect(metric(page, "SLABS FILLED")).to_have_text("–")
    page.get_by_role("slider").first.focus()
    for _ in range(7):  # up to 8 blocks: R2 runs, Free R2 and the question come back
        page.keyboard.press("ArrowRight")
    expect(metric(page, "SLABS FILLED")).to_have_text("47%")
    expect(page.get_by_role("button", name="Free R2")).to_be_enabled()
    expect(page.locator(".kv-predict-question")).to_contain_text("8-block slabs")
    assert page.kv_errors == []


def test_free_r2_strands_its_blocks_in_a_gap(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 8 free")
    page.get_by_role("button", name="Free R2").click()
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 16 free")
    expect(page.locator(".kv-why")).to_contain_text("external fragmentation")
    assert page.kv_errors == []


def expected_cards(snapshots: dict) -> dict[str, str]:
    """Node 02's card texts for these snapshots, as kvviz/nodes.py formats them."""
    from kvviz import formatting as fmt

    return {"CONTIGUOUS": fmt.full(snapshots["contiguous"].metrics),
            "PAGED": fmt.full(snapshots["paged"].metrics),
            "NAIVE REJECTS": fmt.rejects(snapshots["contiguous"].metrics)}


def test_add_request_computes_the_prompt_then_plays_until_the_request_finishes(page, lesson_url):
    from kvviz.nodes.paging.state import PagingState  # the same engines in this process: the values to expect

    mirror = PagingState()
    steps, prompt = mirror.step_count, mirror.prompt
    mirror.add_request(settle=True)
    settled = expected_cards({"contiguous": mirror.contiguous, "paged": mirror.paged})
    page.goto(f"{lesson_url}?node=paging")
    step = page.locator(".kv-step")
    expect(step).to_contain_text(f"step {steps} · idle")
    page.get_by_role("button", name="Add request").click()
    expect(page.get_by_role("button", name="❚❚ Pause")).to_be_visible()  # generating, token by token
    expect(page.locator('.kv-requests[data-pool="paged"] .kv-text').last).to_contain_text(prompt)
    expect(step).to_contain_text(f"step {mirror.step_count} · idle", timeout=30_000)
    for label, text in settled.items():
        expect(metric(page, label, "paging")).to_have_text(text)
    expect(page.get_by_role("button", name="▶ Play")).to_be_visible()
    expect(page).to_have_url(re.compile(r"[?&]add="))
    assert page.kv_errors == []


def test_step_at_idle_says_so_and_play_replays_the_run_from_the_start(page, lesson_url):
    from kvviz.nodes.fragmentation.state import FragmentationState

    steps = FragmentationState().step_count
    page.goto(f"{lesson_url}?node=fragmentation")
    step = page.locator(".kv-step")
    expect(step).to_contain_text(f"step {steps} · idle")
    page.get_by_role("button", name="Step ▶").click()
    expect(page.locator(".kv-notice")).to_contain_text("Nothing left to run")
    page.get_by_role("button", name="▶ Play").click()  # at idle: rewind, then play it again
    expect(step).to_contain_text("playing")
    expect(step).to_contain_text(f"step {steps} · idle", timeout=30_000)
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")
    expect(metric(page, "RESERVED · EMPTY")).to_have_text("12 blk")
    assert page.kv_errors == []


def watch_every_root(start: str, look: str) -> str:
    """A script for `page.evaluate`: runs `start`, then `look(root)` at each change of the page and
    of every shadow root in it, present and to come (figures and widgets draw in shadow roots): seen
    at each change, not at a polling interval, so a state shown for less than a poll is seen too."""
    return """() => {
  START
  const look = LOOK;
  const seen = new WeakSet();
  const watch = (root) => {
    if (seen.has(root)) return;
    seen.add(root);
    new MutationObserver(() => { look(root); scan(root); }).observe(root, {subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ["class"]});
    look(root);
    scan(root);
  };
  const scan = (root) => { for (const el of root.querySelectorAll("*")) if (el.shadowRoot) watch(el.shadowRoot); };
  watch(document);
}""".replace("START", start).replace("LOOK", look)  # noqa: E501 (data: a string kept as written)


# Sets window.__kvLoading once any element shows Panel's spinner (class pn-loading).
SPINNER_SEEN_JS = watch_every_root(
    "window.__kvLoading = false;",
    '(root) => { if (root.querySelector(".pn-loading")) window.__kvLoading = true; }')


def test_fill_the_pool_shows_a_spinner_while_it_works_then_the_eviction(page, lesson_url):
    page.goto(f"{lesson_url}?node=radix&sharing=1" + "&op=release" * 4)
    expect(metric(page, "SAVED")).to_have_text("0%")  # all four released: their blocks cached, idle
    page.evaluate(SPINNER_SEEN_JS)
    page.get_by_role("button", name="Fill the pool").click()
    page.wait_for_function("() => window.__kvLoading", timeout=30_000)
    expect(page.locator(".kv-notice").first).to_contain_text("evicted", timeout=30_000)
    expect(page.locator(".pn-loading")).to_have_count(0)
    assert page.kv_errors == []


def test_embed_route_with_state_in_the_url(page, lesson_url):
    page.goto(f"{lesson_url}?node=radix&sharing=1")
    expect(metric(page, "BLOCKS STORED")).to_have_text("18 blk")
    expect(metric(page, "SAVED")).to_have_text("50%")
    expect(page.locator("#header")).to_have_count(0)  # no template chrome
    assert page.kv_errors == []


def test_malformed_link_falls_back_with_a_visible_notice(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation&reserve=abc")
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")
    expect(page.locator(".kv-url-notice")).to_contain_text("reserve='abc'")


def test_hostile_prompt_shows_literally_and_runs_nothing(page, lesson_url):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{lesson_url}?node=paging")
    expect(metric(page, "NAIVE REJECTS")).to_have_text("0")
    box = page.get_by_role("textbox").first
    box.fill("<img src=x onerror=alert(1)>")
    box.press("Enter")
    expect(page.locator('.kv-requests[data-pool="paged"] .kv-text').last).to_contain_text(
        "<img src=x onerror=alert(1)>")
    expect(page.locator(".kv-requests img")).to_have_count(0)
    settled(page)  # (every figure drawn with the new request's blocks, and their text)
    assert dialogs == []


# Collects the text of every tooltip shown from now on into window.__kvTips (tooltips live in
# figures' shadow roots).
TOOLTIP_TEXTS_JS = watch_every_root(
    "window.__kvTips = [];",
    '(root) => { for (const t of root.querySelectorAll(".bk-tooltip-content")) '
    "window.__kvTips.push(t.textContent); }")


def test_block_tooltip_shows_hostile_text_as_text(page, lesson_url):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{lesson_url}?node=radix&sharing=1&op=ask:%3Cimg%20src=x%20onerror=alert(1)%3E")
    expect(metric(page, "SAVED")).not_to_have_text("0%")
    strip = page.locator(".bk-Figure").first
    strip.scroll_into_view_if_needed()
    box = strip.bounding_box()
    # Every text a tooltip shows while the mouse passes over the blocks (Bokeh fills it on mousemove).
    page.evaluate(TOOLTIP_TEXTS_JS)
    for block in range(16, 22):  # the new request's own blocks sit just after the first row
        col, row = block % 16, block // 16
        # (title in HTML)
        page.mouse.move(box["x"] + 4 + (box["width"] - 8) * (col + 0.5) / 16, box["y"] + 4 + 46 * (row + 0.5))
    # (a block holds 16 bytes of it)
    page.wait_for_function("() => window.__kvTips.some((t) => t.includes('<img src=x on'))")
    assert page.locator(".bk-tooltip img").count() == 0
    assert dialogs == []


def paging_steps() -> int:
    """The steps node 02's engines took to settle its opening requests (this process's engines)."""
    from kvviz.nodes.paging.state import PagingState

    return PagingState().step_count


def test_keyboard_steps_back_and_forward_but_not_while_typing(page, lesson_url):
    n = paging_steps()
    page.goto(f"{lesson_url}?node=paging")
    step = page.locator(".kv-step")
    expect(step).to_contain_text(f"step {n}")
    page.locator(".kv-keyboard").wait_for(state="attached")  # the key listener is installed
    page.keyboard.press("ArrowLeft")
    expect(step).to_contain_text(f"step {n - 1}")
    page.keyboard.press("ArrowRight")
    expect(step).to_contain_text(f"step {n}")
    box = page.get_by_role("textbox").first
    box.fill("")
    box.type("r ")
    expect(box).to_have_value("r ")
    # Had "r" reset or " " played, the server would have done so before it answers this later
    # key (one websocket, in order): the step it shows proves both keys were passed over.
    box.blur()
    page.keyboard.press("ArrowLeft")
    expect(step).to_contain_text(f"step {n - 1} · paused")


def test_actions_are_written_to_the_url(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    page.get_by_role("button", name="Free R2").click()
    expect(page).to_have_url(re.compile(r"node=fragmentation&free_r2=1$"))


def test_download_holds_the_answer_and_the_live_state(page, lesson_url):
    page.goto(f"{lesson_url}?node=explain")
    area = page.locator("textarea")
    area.fill("Paging borrows virtual memory.")
    area.blur()  # (its value goes to the server before the click below does: one websocket, in order)
    with page.expect_download() as download:
        page.get_by_text("Download my answer").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert "Paging borrows virtual memory." in text
    assert '"blocks_reserved_empty": 12' in text


def test_toggling_prefix_sharing_redraws_the_tree_without_page_errors(page, lesson_url):
    page.goto(f"{lesson_url}?node=radix")
    expect(metric(page, "SAVED")).to_have_text("0%")
    sharing = page.locator(".kv-sharing input")
    tree = page.locator(".kv-tree")
    expect(tree).to_be_hidden()
    for saved in ("50%", "0%") * 3:
        sharing.click()
        expect(metric(page, "SAVED")).to_have_text(saved)
        if saved == "50%":
            expect(tree).to_be_visible()
            assert tree.bounding_box()["height"] > 200  # the four branches, drawn
        else:
            expect(tree).to_be_hidden()
        settled(page)  # Bokeh has finished redrawing the tree
    assert page.kv_errors == []


def test_arrow_key_on_the_slider_moves_it_and_runs_no_shortcut(page, lesson_url):
    from kvviz import formatting as fmt
    from kvviz.nodes.fragmentation.state import FragmentationState

    page.goto(f"{lesson_url}?node=fragmentation")
    page.locator(".kv-keyboard").wait_for(state="attached")
    expect(page.locator(".kv-step")).to_contain_text("idle")
    handle = page.get_by_role("slider")
    handle.focus()
    handle.press("ArrowLeft")
    expect(page).to_have_url(re.compile(r"reserve=7"))
    # The server's answer to the slider (the pool rebuilt at 7) comes after its answer to any
    # shortcut the key would have sent first: then, no Step back: the pool settled at 7.
    m = FragmentationState(reserve=7).snapshot.metrics
    expect(metric(page, "RESERVED · EMPTY")).to_have_text(fmt.reserved_empty(m))
    expect(page.locator(".kv-step")).to_contain_text(f"step {FragmentationState(reserve=7).step_count} · "
                                                     "idle")


def test_space_on_a_focused_button_clicks_it_and_does_not_play(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    page.locator(".kv-keyboard").wait_for(state="attached")
    page.get_by_role("button", name="Free R2").focus()
    page.keyboard.press(" ")
    # (the click's answer: a Play sent by the key, first, would have been answered before it)
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 16 free")
    expect(page.locator(".kv-step")).to_contain_text("idle")
    expect(page.get_by_role("button", name="▶ Play")).to_be_visible()


def test_arrow_keys_still_step_after_a_button_was_clicked(page, lesson_url):
    n = paging_steps()
    page.goto(f"{lesson_url}?node=paging")
    page.locator(".kv-keyboard").wait_for(state="attached")
    step = page.locator(".kv-step")
    expect(step).to_contain_text(f"step {n}")
    page.get_by_role("button", name="◀ Step back").click()  # the button keeps the focus
    expect(step).to_contain_text(f"step {n - 1}")
    page.keyboard.press("ArrowRight")
    expect(step).to_contain_text(f"step {n}")


def test_speed_menu_is_found_by_its_accessible_name(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    speed = page.get_by_role("combobox", name="Play speed")
    speed.select_option(label="Speed: slow")  # (the pace itself: tests/lesson/test_kvviz_views.py)
    page.get_by_role("button", name="▶ Play").click()
    expect(page.locator(".kv-step")).to_contain_text("playing")
    page.get_by_role("button", name="❚❚ Pause").click()
    expect(page.locator(".kv-step")).to_contain_text("paused")
    assert page.kv_errors == []


def test_prefix_sharing_checkbox_is_found_by_its_accessible_name(page, lesson_url):
    page.goto(f"{lesson_url}?node=radix")
    page.get_by_role("checkbox", name="Prefix sharing").click()
    expect(metric(page, "SAVED")).to_have_text("50%")


def test_dragging_the_slider_rebuilds_the_pool_with_that_reservation(page, lesson_url):
    from kvviz import formatting as fmt
    from kvviz.nodes.fragmentation.state import FragmentationState

    page.goto(f"{lesson_url}?node=fragmentation")
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")
    track, handle = page.locator(".noUi-target").first, page.locator(".noUi-handle").first
    box, grip = track.bounding_box(), handle.bounding_box()
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.75, grip["y"] + grip["height"] / 2, steps=8)
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"reserve=1[0-4]\b"))
    reserve = int(re.search(r"reserve=(\d+)", page.url).group(1))
    m = FragmentationState(reserve=reserve).snapshot.metrics  # the same engine, in this process
    expect(metric(page, "RESERVED · EMPTY")).to_have_text(fmt.reserved_empty(m))
    expect(metric(page, "LARGEST GAP")).to_have_text(fmt.largest_gap(m))
    expect(metric(page, "IN USE")).to_have_text(fmt.in_use(m))
    assert page.kv_errors == []


def test_reserved_length_slider_is_found_by_its_accessible_name(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    slider = page.get_by_role("slider", name="Reserved length")
    expect(slider).to_have_attribute("aria-valuenow", "8.0")
    slider.press("ArrowUp")
    expect(page).to_have_url(re.compile(r"reserve=9"))


@pytest.mark.parametrize("node", ["fragmentation", "paging", "radix", "explain"])
def test_phone_width_page_does_not_scroll_sideways(page, lesson_url, node):
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{lesson_url}?node={node}")
    page.locator(".kv-keyboard").wait_for(state="attached")
    settled(page)  # let the layout settle
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
