"""The lesson's views, without a browser: what they would draw, that user text stays text, and
that the keyboard and the page wiring reach the right state."""

from __future__ import annotations

import panel as pn
import param
import pytest
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


def test_a_request_list_is_written_after_the_numbers_on_a_played_page():
    """Its pane carries the class the player sets after the frame that shows a state (a row more lays
    the page out again: node 02's first Add request); its text is the pool's requests all the same."""
    from kvviz.figures.request_list import RequestList
    from kvviz.web.live_html import AFTER_PAINT

    p = PagingState()
    listed = RequestList(snapshot=p.param.paged, node="paging", pool="paged")
    pane = listed.__panel__()
    assert AFTER_PAINT in pane.css_classes
    p.add_request("Memory is", settle=True)
    assert pane.object == requests_html(p.paged, "paging", "paged")


def test_metric_card_has_stable_selectors_and_escapes():
    out = card_html("fragmentation", "IN USE", "12 / 32 · 38%", "a <b> c")
    assert 'class="kv-metric" data-node="fragmentation" data-label="IN USE"' in out
    assert '<div class="kv-value">12 / 32 · 38%</div>' in out
    assert "a &lt;b&gt; c" in out


def test_a_row_of_cards_follows_each_cards_own_snapshot():
    """Node 02's row reads two pools (one watcher per snapshot parameter writes its cards): a step
    shows each card its own pool's number, as a card made alone shows it."""
    from kvviz.figures.metric_card import MetricCard, card_row
    from kvviz.nodes.paging import text

    state = PagingState()
    panes = card_row(state, text.CARDS).objects  # (each card's HTML pane)
    before = [p.object for p in panes]
    state.add_request("Memory is", settle=True)
    shown = [p.object for p in panes]
    assert shown == [MetricCard(snapshot=state.param[c.of], node=state.key, card=c)._pane.object
                     for c in text.CARDS]
    assert {c.of for c in text.CARDS} == {"contiguous", "paged"} and shown != before


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


def test_bound_html_follows_its_parameters_and_no_others():
    from bokeh.document import Document

    from kvviz.web.live_html import bound_html

    class Owner(param.Parameterized):
        a = param.Integer(1)
        b = param.String("x")
        other = param.Integer(0)

    owner, made = Owner(), []

    def html_of():
        made.append(1)
        return f"<b>{owner.a}{owner.b}</b>"

    pane = bound_html(html_of, owner.param.a, owner.param.b, margin=(0, 3))
    model = pane.get_root(Document())
    assert model.text == pn.pane.HTML("<b>1x</b>").get_root(Document()).text and pane.margin == (0, 3)
    owner.a = 2
    owner.b = "y"
    assert pane.object == "<b>2y</b>" and model.text == pn.pane.HTML("<b>2y</b>").get_root(Document()).text
    n = len(made)
    owner.other = 5  # (not one of its parameters: nothing is written again)
    assert len(made) == n and pane.object == "<b>2y</b>"
    with pytest.raises(ValueError, match="one owner"):
        bound_html(html_of, owner.param.a, Owner().param.b)


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
