"""The lesson's views, without a browser: what they would draw, that user text stays text, and
that the keyboard and the page wiring reach the right state."""

from __future__ import annotations

import panel as pn
from bokeh.models import HoverTool

from kvviz.figures.block_strip import BlockStrip, strip_data
from kvviz.figures.cells import DIAGONALS, HATCH_LINES
from kvviz.figures.metric_card import card_html
from kvviz.figures.radix_tree import RadixTreeFigure, layout
from kvviz.figures.request_list import requests_html
from kvviz.lesson import Lesson, link_notice_html
from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.fragmentation.view import FragmentationView
from kvviz.nodes.paging.state import PagingState
from kvviz.nodes.radix.state import RadixState
from kvviz.nodes.radix.view import RadixView


def test_strip_has_one_cell_per_block_labelled_by_owner():
    snap = FragmentationState().snapshot
    cells, bars, _ = strip_data(snap)
    assert len(cells["block_id"]) == 32 == len(bars["left"])
    assert cells["label"][:4] == ["R1"] * 4
    assert cells["hatch"][4] == "/" and cells["state"][4].startswith("reserved")  # R1's empty slab
    assert cells["state"][-1] == "free"


def test_strip_hatches_reserved_cells_with_stripes_in_the_owners_colour():
    snap = FragmentationState().snapshot
    cells, _, lines = strip_data(snap)
    per_cell = HATCH_LINES
    assert len(lines["x0"]) == 32 * per_cell == len(lines["x0_n"])
    diagonals = slice(4 * per_cell, 4 * per_cell + DIAGONALS)  # block 4: reserved by R1, empty
    assert set(lines["colour"][diagonals]) == {cells["line"][4]} != {"#333333"}
    assert min(lines["alpha"][diagonals]) > 0
    assert max(lines["alpha"][: per_cell]) == 0  # block 0 holds tokens: no stripes shown
    xs = [*lines["x0"][diagonals], *lines["x1"][diagonals]]
    assert all(4.05 - 1e-9 <= x <= 4.95 + 1e-9 for x in xs)  # in the cell


def test_strip_marks_shared_blocks_with_a_count():
    r = RadixState(sharing=True)
    cells, _, _ = strip_data(r.snapshot)
    assert cells["label"][:6] == ["×4"] * 6
    assert all(w > 3 for w in cells["lw"][:6])


def test_strip_tooltips_are_never_unescaped():
    strip = BlockStrip(snapshot=FragmentationState().param.snapshot)
    hover = next(t for t in strip.figure.tools if isinstance(t, HoverTool))
    assert all("{safe}" not in field for _, field in hover.tooltips)


def test_strip_updates_in_place():
    state = FragmentationState()
    strip = BlockStrip(snapshot=state.param.snapshot)
    source, fig = strip.cells, strip.figure
    state.free_r2()
    assert strip.cells is source and strip.figure is fig
    assert "R2" not in source.data["label"]


def test_request_list_escapes_prompts(hostile):
    p = PagingState()
    p.add_request(hostile)
    out = requests_html(p.paged, "paging", "paged")
    assert hostile not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out


def test_metric_card_has_stable_selectors_and_escapes():
    out = card_html("fragmentation", "IN USE", "12 / 32 · 38%", "a <b> c")
    assert 'class="kv-metric" data-node="fragmentation" data-label="IN USE"' in out
    assert '<div class="kv-value">12 / 32 · 38%</div>' in out
    assert "a &lt;b&gt; c" in out


def test_radix_tree_layout_puts_the_trunk_between_root_and_branches():
    nodes, edges, rows = layout(RadixState(sharing=True).snapshot)
    assert nodes["label"][0] == "root"
    assert rows == 4 and len(edges["x0"]) == 5
    assert sorted(set(nodes["x"])) == [0.0, 1.0, 2.0]


def test_link_notices_are_escaped(hostile):
    lesson = Lesson({"node": [hostile.encode()]})
    assert lesson.url.node is None
    out = link_notice_html(lesson.link_notices)
    assert hostile not in out and "&lt;img" in out


def test_keyboard_acts_on_the_node_in_view_else_the_last_touched():
    lesson = Lesson({})
    lesson.on_key("back", "paging")
    assert lesson.states["paging"].step_count == lesson.states["paging"].scenario.paged.num_steps
    assert lesson.active == "paging"
    before = lesson.states["fragmentation"].step_count
    lesson.touch("fragmentation")
    lesson.on_key("back", None)
    assert lesson.states["fragmentation"].step_count == before - 1
    lesson.on_key("play", "explain")  # not a live node: the last touched one plays
    assert lesson.states["fragmentation"].playing


def test_embed_page_serves_one_node():
    lesson = Lesson({"node": [b"radix"], "sharing": [b"1"]})
    page = lesson.node_page("radix")
    assert lesson.states["radix"].sharing and "kv-embed" in page.css_classes


def test_page_table_follows_the_added_request():
    from kvviz.figures.page_table import PageTable, block_xy

    state = PagingState()
    table = PageTable(snapshot=state.param.paged, request=state.param.request)
    state.add_request("A student's own prompt")
    newest = state.paged.requests[-1]
    assert state.request == newest.name
    links = [(x, y) for x, y in zip(table.links.data["x1"], table.links.data["y1"], strict=True) if x == x]
    assert links == [(block_xy(b)[0], block_xy(b)[1] - 0.45) for b in newest.block_table]
    assert len(table.links.data["x1"]) == len(table.pages.data["label"]) == state.paged.metrics.blocks_total


def test_page_table_sources_keep_their_length_whatever_the_request():
    from kvviz.figures.page_table import table_data

    snap = PagingState().paged

    def sources(name):  # pages (cells, bars, stripes), blocks (cells, bars, stripes), links
        pages, blocks, links = table_data(snap, name)
        return [*pages, *blocks, links]

    lengths = {name: [len(v) for d in sources(name) for v in d.values()]
               for name in [None, *(r.name for r in snap.requests)]}
    assert len({tuple(v) for v in lengths.values()}) == 1
    pages, _, _, blocks, _, _, links = sources(None)
    assert {len(v) for d in (pages, blocks, links) for v in d.values()} == {snap.metrics.blocks_total}


def test_page_table_draws_blocks_where_the_strip_does_on_a_wide_screen():
    from kvviz.figures.block_strip import PER_ROW
    from kvviz.figures.page_table import block_xy

    assert block_xy(0) == (0.5, block_xy(0)[1]) and block_xy(PER_ROW)[0] == 0.5
    assert block_xy(PER_ROW)[1] > block_xy(PER_ROW - 1)[1]  # the second row, below the first


def test_reset_returns_node_01_widgets_to_their_defaults():
    state = FragmentationState()
    node = FragmentationView(state=state)
    free = next(b for b in node.__panel__().select(pn.widgets.Button) if b.label == "Free R2")
    slider = next(iter(node.__panel__().select(pn.widgets.IntSlider)))
    slider.value = 5
    free.clicks += 1
    assert free.disabled
    state.reset()
    assert (slider.value, free.disabled) == (8, False)
    assert state.notice.startswith("Back to the lesson's starting point")


def test_reset_unticks_node_03_prefix_sharing():
    state = RadixState()
    node = RadixView(state=state)
    sharing = next(iter(node.__panel__().select(pn.widgets.Checkbox)))
    sharing.value = True
    assert state.sharing
    state.reset()
    assert sharing.value is False and not state.sharing
    assert state.snapshot.metrics.blocks_stored == 36


def test_radix_tree_sources_keep_their_length_whatever_the_tree():
    state = RadixState()
    tree = RadixTreeFigure(snapshot=state.param.snapshot, sharing=state.param.sharing)
    sizes = {len(c) for c in tree.nodes.data.values()}, {len(c) for c in tree.edges.data.values()}
    state.sharing = True
    state.fill_pool()
    assert len(layout(state.snapshot)[0]["x"]) > 1  # the tree grew ...
    assert ({len(c) for c in tree.nodes.data.values()}, {len(c) for c in tree.edges.data.values()}) == sizes
    assert sizes == ({49}, {48})  # ... inside sources sized for the 48-block pool


def test_strip_update_sends_only_the_columns_that_changed():
    from bokeh.document import Document

    state = FragmentationState()
    strip = BlockStrip(snapshot=state.param.snapshot)
    doc = Document()
    doc.add_root(strip.figure)
    sent = []
    doc.on_change(lambda e: sent.append(
        (e.model, sorted(getattr(e, "cols", None) or getattr(e, "patches", None) or []))))
    state.free_r2()
    cols = {c for model, cs in sent if model is strip.cells for c in cs}
    assert "label" in cols and not cols & {"x", "y", "x_n", "y_n", "block_id"}
    sent.clear()
    state.step()  # at idle: nothing changes, so nothing is sent
    assert not [m for m, _ in sent if m in (strip.cells, strip.bars, strip.lines)]


def test_live_html_sends_the_same_text_as_panels_html_pane():
    from bokeh.document import Document

    from kvviz.web.live_html import LiveHTML

    ours, panels = LiveHTML("<b>a</b>"), pn.pane.HTML("<b>a</b>")
    doc = Document()
    models = ours.get_root(doc), panels.get_root(doc)
    for text in ("<i>x &amp; y</i>", '<span class="kv-value">12 / 32 · 38%</span>', ""):
        ours.object = panels.object = text
        assert models[0].text == models[1].text


def test_speed_menu_changes_the_pace_of_play_even_while_playing():
    from kvviz.controls.transport import SPEEDS, Transport

    state = FragmentationState()
    transport = Transport(state=state)
    state.toggle_play()
    assert transport.player._callback is not None
    transport.speed.value = SPEEDS["Speed: slow"]
    assert transport.player._callback.period == transport.player.period_ms == 800
    state.playing = False
    assert transport.player._callback is None


def test_full_page_builds_only_the_first_node_until_the_browser_reports_the_others_near():
    lesson = Lesson({})
    lesson.full_page()
    assert set(lesson._views) == {"fragmentation"}
    slot = lesson.slot("radix")
    assert not slot.built and "kv-node-radix" in slot._layout.css_classes
    slot.sensor.near = True  # what the browser's IntersectionObserver sets
    assert slot.built and "radix" in lesson._views
    view = lesson._views["radix"]
    slot.sensor.near = False
    slot.sensor.near = True  # built once, kept
    assert lesson._views["radix"] is view and slot._layout.objects[-1] is view.__panel__()
    assert "kv-slot-empty" not in slot._layout.css_classes


def test_play_ticks_only_while_the_node_is_on_screen(monkeypatch, frag):
    from kvviz.controls.transport import Player

    started = []

    class FakeCallback:
        period = 0

        def stop(self):
            started.remove(self)

    def add_periodic_callback(callback, period):
        started.append(FakeCallback())
        return started[-1]

    monkeypatch.setattr(pn.state, "add_periodic_callback", add_periodic_callback)
    player = Player(frag)
    frag.playing = True
    assert len(started) == 1
    player.set_visible(False)  # scrolled away: the timer stops, the node still says playing
    assert started == [] and frag.playing
    player.set_visible(True)
    assert len(started) == 1
    frag.playing = False
    assert started == []


def test_class_pace_comes_from_the_environment_within_bounds():
    from kvviz.controls.transport import class_pace

    assert class_pace({}) == 250 and class_pace({"KVVIZ_PLAY_MS": "600"}) == 600
    assert [class_pace({"KVVIZ_PLAY_MS": v}) for v in ("10", "99999", "²", "fast", "-5")] == [250] * 5


# -- issue 11: every picture teaches its claim ---------------------------------------------------
def test_after_free_r2_node_01_draws_two_separate_holes_in_both_layouts(frag):
    from kvviz.figures.block_strip import NARROW_PER_ROW, free_runs, gap_data

    frag.free_r2()
    snap = frag.snapshot
    assert free_runs(snap) == [(8, 8), (24, 8)]  # R2's slab, and the tail: 16 free, 8 in a row at most
    boxes = gap_data(snap, 32, NARROW_PER_ROW)
    for sfx in ("", "_n"):  # rows of 32 (a wide screen), rows of 8 (a phone)
        drawn = [(x, y, w)
                 for x, y, w in zip(boxes["x" + sfx], boxes["y" + sfx], boxes["width" + sfx], strict=True)
                 if x == x]
        assert len(drawn) == 2
        (x0, y0, w0), (x1, y1, w1) = sorted(drawn, key=lambda b: (b[1], b[0]))
        same_row = y0 == y1
        # apart: on one row a slab lies between them; on rows of 8, a row of R3 lies between them
        assert (same_row and x1 - w1 / 2 - (x0 + w0 / 2) >= 1) or (not same_row and y1 - y0 >= 2), sfx


def test_a_run_of_free_blocks_across_rows_is_one_hole_said_to_go_on():
    from kvviz.figures.block_strip import gap_data

    state = FragmentationState(reserve=5)  # R1-R3 in blocks 0-14: the 17 free ones cross rows of 8
    boxes = gap_data(state.snapshot, 32, 8)
    texts = [t for t, x in zip(boxes["text_n"], boxes["x_n"], strict=True) if x == x]
    assert texts == ["17 …", "… 17 free …", "… 17 free"]  # (block 15 alone, then two full rows)
    assert [t for t, x in zip(boxes["text"], boxes["x"], strict=True) if x == x] == ["17 free"]


def test_the_strip_lights_what_the_last_decode_step_read_and_who_read_it():
    from kvviz.figures.block_strip import last_reads, reads_caption

    state = RadixState(sharing=True)
    state.rewind()
    state.step()  # prefill: the decode kernel read nothing in this step
    assert last_reads(state.snapshot) == {}
    state.step()
    reads = last_reads(state.snapshot)
    assert [len(reads[b]) for b in range(6)] == [4] * 6  # the shared system prompt: read by all four
    assert reads[0] == [("R1", 0), ("R2", 0), ("R3", 0), ("R4", 0)]
    assert {b for b, n in enumerate(state.snapshot.block_reads) if n} == set(reads)
    cells, _, _ = strip_data(state.snapshot, show_reads=True)
    assert cells["read"][:6] == [1.0] * 6 and "R4 via its page 0" in cells["reads"][0]
    assert strip_data(state.snapshot, show_reads=False)[0]["read"] == [0.0] * 48
    assert "6 of them held once and read by up to 4 requests" in reads_caption(state.snapshot, True)


def test_block_tables_draw_every_block_as_the_strip_does():
    from kvviz.figures.page_table import table_data

    state = PagingState()
    state.add_request()  # the slab is reserved at once, its pages mostly empty
    snap = state.contiguous
    (pages, _, _), (blocks, _, _), _ = table_data(snap, state.request)
    strip, _, _ = strip_data(snap)
    for k in ("fill", "line", "hatch", "label"):
        assert blocks[k] == strip[k]  # other requests' blocks in their colours, free ones free
    table = snap.request(state.request).block_table
    assert [pages["hatch"][i] for i in range(len(table))] == [strip["hatch"][b] for b in table]
    assert "/" in pages["hatch"][: len(table)]  # reserved, empty pages: hatched, not solid


def test_thirteen_requests_get_thirteen_colours():
    from kvviz.figures.cells import owner_colour

    assert len({owner_colour(r) for r in range(1, 14)}) == 13


def test_radix_tree_colours_each_branch_as_its_request_and_the_trunk_as_shared():
    from kvviz.figures.cells import SHARED_FILL, owner_colour

    snap = RadixState(sharing=True).snapshot
    nodes, _, _ = layout(snap)
    fills = dict(zip(nodes["label"], nodes["fill"], strict=True))
    assert fills[nodes["label"][1]] in (SHARED_FILL, owner_colour(1))
    assert sorted(f for f in nodes["fill"][1:] if f != SHARED_FILL) == sorted(owner_colour(r)
                                                                              for r in (1, 2, 3, 4))
    assert nodes["fill"].count(SHARED_FILL) == 1


def test_request_list_says_stopped_with_the_reason_and_counts_repeated_refusals():
    from kvviz.figures.request_list import requests_html, why_lines

    out = requests_html(FragmentationState(reserve=3).snapshot, "fragmentation", "contiguous")
    assert out.count('class="kv-stopped">stopped') == 3 and "its reserved slab of 3 blocks is full" in out
    paging = PagingState()
    for _ in range(6):
        paging.add_request(settle=True)
    lines = why_lines(paging.contiguous, "contiguous")
    assert (len(lines) == 1
            and lines[0].startswith(f"{paging.contiguous.metrics.rejected} requests refused by"))
    both = requests_html(paging.paged, "paging", "paged", paging.contiguous, "contiguous")
    assert "<th>contiguous</th><th>paged</th>" in both and both.count('<tr data-request="R8"') == 1


def test_long_texts_are_cut_at_a_word_and_finished_replies_marked_as_stopped():
    from kvviz.figures.request_list import shown_text

    r = RadixState().snapshot.requests[0]
    out = shown_text(r)
    assert '<span class="kv-prompt">…memory,' in out  # (the system prompt cut before a whole word)
    assert out.endswith('title="stopped by the engine, not ended by the model">…</span>')


def test_each_node_shows_only_the_legend_cues_its_pictures_draw():
    from kvviz.figures.legend import legend_html
    from kvviz.nodes.fragmentation import text as frag_text
    from kvviz.nodes.radix import text as radix_text

    assert ('data-cue="gap"' in legend_html(frag_text.LEGEND)
            and 'data-cue="shared"' not in legend_html(frag_text.LEGEND))
    assert 'data-cue="shared"' in legend_html(radix_text.LEGEND) and 'data-cue="reserved"' not in legend_html(
        radix_text.LEGEND)


def test_node_01_opened_where_r2_never_ran_still_offers_the_choices_once_it_does():
    from kvviz.controls.prediction import Prediction

    state = FragmentationState(reserve=1)
    panel = Prediction(state=state)
    labels = [b.name for b in panel.controls.objects]
    assert labels == ["Predict: admitted", "Predict: refused"] and panel.entry is None
    assert not panel.controls.visible  # no question while there is no R2
    state.reserve = 8
    assert panel.controls.visible and "8-block slabs" in panel.question.object


def test_free_r2_is_off_with_its_reason_where_there_is_no_r2():
    state = FragmentationState(reserve=2)
    view = FragmentationView(state=state)
    free = [w for w in view._layout.select(pn.widgets.Button) if w.name == "Free R2"][0]
    assert free.disabled
    off = [p for p in view._layout.select(pn.pane.HTML) if "kv-off" in str(p.object)][0]
    assert "R2 holds no slab" in off.object and "reservation is only 2" in off.object
    state.reserve = 8
    assert not free.disabled and state.free_r2_off == ""


def test_every_request_colour_carries_its_label_at_a_text_contrast_of_4_5_or_more():
    from kvviz.figures.cells import PALETTE, contrast, ink_on

    assert (round(contrast("#ffffff", "#000000"), 1) == 21.0
            and round(contrast("#ffffff", "#f0ad4e"), 2) == 1.95)
    for colour in PALETTE:  # (the request chips and the block labels: white on #009E73 read 3.4:1)
        assert contrast(colour, ink_on(colour)) >= 4.5, colour


def test_a_view_is_handed_the_lessons_outline_for_its_back_and_continue_links():
    """(the registry hands it down: no view, no control imports the registry)"""
    from kvviz.controls.step_links import StepLinks
    from kvviz.nodes import BY_KEY, OUTLINE

    view = BY_KEY["radix"].new_view(RadixState())
    assert view.outline == OUTLINE
    [links] = view.__panel__().select(StepLinks)
    assert 'data-node="paging">← Back: 02 · ' in links.items_html
    assert 'data-node="vllm">Continue: 04 · ' in links.items_html
    [alone] = RadixView(state=RadixState()).__panel__().select(StepLinks)  # (outside a lesson: none)
    assert alone.items_html == ""
