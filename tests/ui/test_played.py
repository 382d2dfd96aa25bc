"""The served lesson in Chromium (kvviz/serve/routes.py): the browser plays the recordings of the
server's own engine, and only what no recording holds reaches the server, live.

Every scripted action here is checked against what the live engine shows for that state, and
none of them opens a websocket or sends a request; with the network to the server cut after
the page loaded, every scripted action still works and a typed question says why it can't run.
"""

from __future__ import annotations

import re

import pytest
from phone_checks import PHONE
from played_support import LIVE_MS, metric, open_lesson
from playwright.sync_api import expect

from kvviz.nodes.fragmentation.state import FragmentationState
from tools.browser import settled

pytestmark = pytest.mark.ui


def test_scripted_actions_play_in_the_browser_with_nothing_sent(page, recorded):
    traffic = open_lesson(page, recorded)
    assert "/lesson/" in page.url
    expect(page.locator(".kv-recording").first).to_contain_text("Recorded from this server's engine")
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")
    page.get_by_role("button", name="Free R2").first.click()
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 16 free")
    page.get_by_role("slider", name=re.compile("Reserved length")).first.press("ArrowUp")
    nine = FragmentationState(reserve=9)  # what the live engine shows at 9, R2 freed
    nine.free_r2()
    expect(metric(page, "RESERVED · EMPTY")).to_have_text(f"{nine.snapshot.metrics.blocks_reserved_empty} "
                                                          "blk")
    page.get_by_role("button", name="⟲ Rewind").first.click()
    expect(page.locator(".kv-step").first).to_contain_text("step 0")
    page.get_by_role("button", name="Step ▶").first.click()
    expect(page.locator(".kv-step").first).to_contain_text("step 1")
    page.get_by_role("checkbox", name="Prefix sharing").check()
    expect(metric(page, "BLOCKS STORED")).to_have_text("18 blk")
    # The address bar holds the state (the live lesson's own parameters): a copied link restores it.
    expect(page).to_have_url(re.compile(r"reserve=9.*sharing=1"))
    # Nothing reached the server's engine: no websocket, no request but a library's stylesheet
    # (fetched once when a component first draws: a static, cacheable file), the class state the
    # page polls on a timer, and the roster's reports of where the page is: one when the node in
    # view changes (or a heartbeat), not one per action (5 above, on 2 nodes).
    assert traffic["ws"] == []
    assert [u for u in traffic["requests"] if "/lesson/static/" not in u] == []
    reports = [u for u in traffic["class"] if u.endswith("/lesson-report")]
    assert len(reports) <= 3
    assert page.kv_errors == []


def test_a_link_opens_on_its_recorded_state(page, recorded):
    open_lesson(page, recorded, "?reserve=12&free_r2=1&sharing=1")
    twelve = FragmentationState(reserve=12)
    twelve.free_r2()
    expect(metric(page, "LARGEST GAP")).to_have_text(
        f"{twelve.snapshot.metrics.largest_free_run} / {twelve.snapshot.metrics.blocks_free} free")
    expect(metric(page, "BLOCKS STORED")).to_have_text("18 blk")
    expect(page.locator(".kv-live-frame")).to_have_count(0)  # (nothing live: all recorded)


def test_network_cut_scripted_actions_still_work_and_a_question_says_why_not(page, recorded):
    traffic = open_lesson(page, recorded)
    page.route("**/*", lambda r: r.abort())  # the server is gone (Wi-Fi dropped)
    page.get_by_role("checkbox", name="Prefix sharing").check()
    expect(metric(page, "SAVED")).to_have_text("50%")
    page.get_by_role("button", name="Free R2").first.click()
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 16 free")
    box = page.get_by_role("textbox", name=re.compile("Your question")).first
    box.fill("What is a page?")
    box.press("Enter")
    expect(page.locator(".kv-live-error")).to_contain_text("could not be reached")
    expect(metric(page, "SAVED")).to_have_text("50%")  # (the recording still shows and plays)
    # The network back: the server's engine runs the question, from the state the node was at,
    # and the page plays its answer in place (no session, no websocket).
    page.unroute("**/*")
    sent_before = len(traffic["requests"])
    box.fill("What is a page of memory?")
    box.press("Enter")
    note = page.locator(".kv-live-note").first
    expect(note).to_contain_text("Live", timeout=LIVE_MS)
    expect(metric(page, "BLOCKS STORED")).to_have_text(
        f"{_radix_blocks('sharing=1&op=ask:What is a page of memory?')} blk")
    # ... said where the student typed: under the question box, above the node's picture and numbers
    settled(page)
    typed, said = box.bounding_box(), note.bounding_box()
    numbers = page.locator('.kv-metric[data-node="radix"]').first.bounding_box()
    assert typed["y"] + typed["height"] <= said["y"] < said["y"] + said["height"] <= numbers["y"]
    assert traffic["ws"] == []
    asked = [u for u in traffic["requests"][sent_before:] if "/lesson-live?" in u]
    assert len(asked) == 1 and "node=radix" in asked[0] and "sharing=1" in asked[0]
    expect(page).to_have_url(re.compile(r"op=ask%3AWhat"))
    # Its steps play in the page: back to before the question's last token, nothing sent.
    before = len(traffic["requests"])
    page.get_by_role("button", name="◀ Step back").last.click()
    expect(page).to_have_url(re.compile(r"at_radix=\d+"))
    # ... and back to its start: the steps before the question are the page's own, as they were
    page.get_by_role("button", name="⟲ Rewind").last.click()
    expect(page.locator('.kv-step[data-node="radix"]')).to_contain_text("step 0")
    expect(metric(page, "BLOCKS STORED")).to_have_text("0 blk")
    page.get_by_role("button", name="Step ▶").last.click()
    expect(page.locator('.kv-step[data-node="radix"]')).to_contain_text("step 1")
    assert len(traffic["requests"]) == before


def _radix_blocks(query: str) -> int:
    """BLOCKS STORED for node 03 at a link's state, from the live engine."""
    from kvviz import urlstate
    from kvviz.nodes.radix import url
    from kvviz.nodes.radix.state import RadixState

    state, notices = RadixState(), []
    url.restore(state, urlstate.parse_search(query).links["radix"], notices)
    return state.snapshot.metrics.blocks_stored


def test_a_state_no_recording_holds_is_run_by_the_server_and_played(page, recorded):
    traffic = open_lesson(page, recorded, "?op=release")
    expect(page.locator(".kv-live-note").first).to_contain_text("Live", timeout=LIVE_MS)
    expect(metric(page, "BLOCKS STORED")).to_have_text(f"{_radix_blocks('op=release')} blk")
    expect(page).to_have_url(re.compile(r"op=release"))
    assert traffic["ws"] == []


def test_release_oldest_is_run_by_the_server_then_sharing_from_there(page, recorded):
    """A button no recording holds, then a recorded control on the state it led to: both go to
    the server (the state is its), and the picture is what the live engine shows."""
    traffic = open_lesson(page, recorded, "?sharing=1")
    page.get_by_role("button", name="Release oldest").click()
    expect(page).to_have_url(re.compile(r"op=release"))
    expect(metric(page, "BLOCKS STORED")).to_have_text(f"{_radix_blocks('sharing=1&op=release')} blk")
    page.get_by_role("checkbox", name="Prefix sharing").uncheck()
    expect(page).not_to_have_url(re.compile(r"sharing=1"))
    expect(metric(page, "BLOCKS STORED")).to_have_text(f"{_radix_blocks('op=release')} blk")
    assert len([u for u in traffic["requests"] if "/lesson-live?" in u]) == 2 and traffic["ws"] == []
    assert page.kv_errors == []


def test_a_prediction_resolves_in_the_page_from_the_recorded_outcome(page, recorded):
    """Predict, then run, with nothing sent: the verdict is the live engine's, word for word."""
    from kvviz.nodes.radix.state import RadixState
    from kvviz.state import predict

    live = RadixState()
    live.predict("9")
    live.sharing = True
    expected = predict.verdict(live.predictions[-1])

    traffic = open_lesson(page, recorded)
    box = page.locator(".kv-recorded-radix").get_by_placeholder("a whole number")  # (node 03's: a number)
    box.fill("abc")
    box.press("Enter")
    expect(page.locator('.kv-predict-note[data-node="radix"]')).to_contain_text("Type a whole number")
    box.fill("9")
    box.press("Enter")
    expect(page.locator('.kv-predict-note[data-node="radix"]')).to_contain_text("Locked in: 9.")
    page.get_by_role("checkbox", name="Prefix sharing").check()
    expect(page.locator('.kv-predict-note[data-node="radix"]')).to_have_text(expected)
    assert "Not this time" in expected and "18" in expected
    assert traffic["ws"] == [] and [u for u in traffic["requests"] if "/lesson/static/" not in u] == []
    assert page.evaluate("window.kvvizPlayer.predictions()")[0]["outcome"] == "18"


def test_hand_in_from_the_recorded_lesson_in_one_request(page, recorded, served):
    """The predictions made in the page and the state's link reach the teacher's store, with no
    session; a hostile name stays text."""
    from kvviz.handin.storage import Store

    open_lesson(page, recorded, "?reserve=12")
    box = page.locator(".kv-recorded-radix").get_by_placeholder("a whole number")
    box.fill("18")
    box.press("Enter")
    page.get_by_role("checkbox", name="Prefix sharing").check()
    expect(page.locator('.kv-predict-note[data-node="radix"]')).to_contain_text("Right")
    name = "<img src=x onerror=alert(1)> played"
    # (the box under Explain it back; one shows under the verdict too)
    end = page.get_by_role("region", name="Hand in")
    end.locator(".kv-handin-name").fill(name)
    end.get_by_role("button", name="Hand in", exact=True).click()
    expect(end.locator(".kv-handin-status")).to_contain_text("Your teacher can see it now")
    stored = [h for h in Store(str(served.db)).handins() if h.name == name]
    assert len(stored) == 1 and "reserve=12" in stored[0].query and "sharing=1" in stored[0].query
    assert [(p.predicted, p.outcome, p.right) for p in stored[0].predictions] == [("18", "18", True)]
    assert page.kv_errors == []


def test_the_server_computes_exactly_what_the_recording_holds(page, recorded):
    """Equality at the switch to live: the server's engine, asked for a recorded state, answers
    with a branch whose every state draws exactly what the recording draws (every recorded
    property of every state), and the cards on screen stay the same."""
    open_lesson(page, recorded, "?reserve=12&free_r2=1")
    cards = page.locator('.kv-metric[data-node="fragmentation"]')
    expect(cards.first).to_be_visible()
    before = {c.get_attribute("data-label"): c.locator(".kv-value").inner_text() for c in cards.all()}
    assert len(before) >= 4
    recorded_branch = page.evaluate("window.kvvizPlayer.nodes.fragmentation.branch")
    page.evaluate("window.kvvizPlayer.nodes.fragmentation.live({})")
    expect(page.locator(".kv-live-note").first).to_contain_text("Live", timeout=LIVE_MS)
    differences = page.evaluate("""(recorded) => {
      const n = window.kvvizPlayer.nodes.fragmentation, P = window.kvvizPlayer;
      const plain = (x) => JSON.stringify(ArrayBuffer.isView(x) ? Array.from(x) : x);
      const a = n.rec.branches[recorded], b = n.rec.branches[n.branch];
      if (!n.branch.startsWith('live') || a.length !== b.length) return ['states', n.branch, a.length, b.length];
      const out = [];
      a.forEach((row, s) => row.forEach((vi, i) => {
        if (plain(P.decode(n.rec.values[vi])) !== plain(P.decode(n.rec.values[b[s][i]]))) out.push([s, n.rec.props[i][1]]);
      }));
      return out;
    }""", recorded_branch)  # noqa: E501 (data: a string kept as written)
    assert differences == []
    for label, value in before.items():
        expect(page.locator(f'.kv-metric[data-node="fragmentation"][data-label="{label}"] .kv-value')
               ).to_have_text(value)


def test_a_figures_size_follows_the_state_shown_even_after_quick_toggles(page, recorded):
    """A figure's new height is set a frame after the new state is painted: after quick toggles
    it still ends at the height of the state shown (node 03's tree grows when sharing is on)."""
    open_lesson(page, recorded)
    box = page.get_by_role("checkbox", name="Prefix sharing")
    for _ in range(3):
        box.check()
        box.uncheck()
    box.check()
    expect(metric(page, "BLOCKS STORED")).to_have_text("18 blk")
    page.wait_for_function("""() => {
      const n = window.kvvizPlayer.nodes.radix;
      const sizes = n.rec.props.map(([_id, a], i) => [a, i]).filter(([a]) => a === 'height');
      return sizes.length > 0 && sizes.every(([_a, i]) =>
        n.models[i].height === window.kvvizPlayer.decode(n.rec.values[n.shown[i]]));
    }""", timeout=10_000)


def test_a_buttons_state_and_text_change_on_the_button_itself(page, recorded):
    """Free R2's button is disabled once R2 is freed and enabled by Reset, and Play's text says
    what it does, on the same <button> element (BokehJS would render a new one, laying the page out:
    9-20 ms of a click); a render after that draws what the model holds."""
    open_lesson(page, recorded)
    free = page.get_by_role("button", name="Free R2").first
    element = free.element_handle()
    free.click()
    expect(free).to_be_disabled()
    page.get_by_role("button", name="Reset").first.click()
    expect(free).to_be_enabled()
    play = page.get_by_role("button", name="▶ Play").first.element_handle()  # (node 01's: the page's first)
    play.click()
    page.wait_for_function("el => el.textContent.includes('❚❚ Pause')", arg=play)
    assert page.evaluate("window.kvvizPlayer.nodes.fragmentation.playButton.label") == "❚❚ Pause"
    play.click()
    # (this button's own text: another node's Play button, always there, says nothing of this one)
    page.wait_for_function("el => el.textContent.includes('▶ Play')", arg=play)
    assert element.evaluate("el => el.isConnected") and play.evaluate("el => el.isConnected")
    # (the models agree: a button drawn again from them shows the same state and text)
    models = page.evaluate("""() => { const n = window.kvvizPlayer.nodes.fragmentation;
      const buttons = [...new Set(n.models)].filter((m) => m && m.type === 'panel.models.widgets.Button');
      return [n.playButton.label, buttons.some((m) => m.label === 'Free R2' && m.disabled === false)]; }""")
    assert models == ["▶ Play", True]
    assert page.kv_errors == []


def test_play_keeps_its_time_scrolled_away_and_draws_the_step_it_is_at_when_seen(page, recorded):
    """Play keeps its pace while its node is scrolled away but draws none of those steps; once the
    node is back on screen (or the run stops), the step it is at is drawn."""
    open_lesson(page, recorded)
    frag = "window.kvvizPlayer.nodes.fragmentation"
    counter = page.locator('.kv-step[data-node="fragmentation"]').first
    page.get_by_role("button", name="⟲ Rewind").first.click()
    page.get_by_role("button", name="▶ Play").first.click()
    page.wait_for_function(f"{frag}.index >= 2")
    page.evaluate("window.kvvizPlayer.nodes.radix.section.scrollIntoView()")
    page.wait_for_function(f"{frag}.hidden")
    shown, at = counter.text_content(), page.evaluate(f"{frag}.index")
    page.wait_for_function(f"{frag}.index >= {at} + 3")  # (its pace kept: a step each 250 ms)
    assert counter.text_content() == shown  # (nothing drawn meanwhile)
    page.evaluate(f"{frag}.section.scrollIntoView()")
    page.evaluate(f"{frag}.play(false)")
    expect(counter).to_contain_text(f"step {page.evaluate(f'{frag}.index')} ")
    assert page.kv_errors == []


def test_continue_to_node_04_lands_on_its_live_link(page, recorded):
    """The last recorded node's "Continue" goes to node 04's section of the page (a live link)."""
    open_lesson(page, recorded)
    page.get_by_role("link", name=re.compile(r"Continue: 04")).click()
    expect(page.get_by_role("link", name="Open node 04")).to_be_in_viewport()
    assert "/lesson/" in page.url


def test_on_a_phone_the_recorded_lesson_is_laid_out_at_the_phones_width(browser, recorded):
    """The recorded pages carry the viewport tag: a phone lays them out at its own 390 px (not
    at 980 px, shrunk), with the strips reflowed to rows of eight and nothing to scroll sideways."""
    context = browser.new_context(**PHONE)
    page = context.new_page()
    open_lesson(page, recorded)
    assert page.locator('meta[name="viewport"]').get_attribute("content") == (
        "width=device-width, initial-scale=1")
    assert page.evaluate("window.innerWidth") == 390
    settled(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    per_row = page.evaluate("""() => { for (const doc of Bokeh.documents) for (const m of doc.all_models)
        if (m.type === "Figure" && m.renderers.some((r) => "x_n" in r.data_source.data)) return m.x_range.end - m.x_range.start; }""")  # noqa: E501 (data: a string kept as written)
    assert per_row == 8
    context.close()
