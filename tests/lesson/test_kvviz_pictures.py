"""The lesson's pictures, without a browser (issue 11): each draws what it claims, the holes, the
blocks read, the block tables, a colour and a label for every request, the legend's cues."""

from __future__ import annotations

import re

import panel as pn

from kvviz.figures.block_strip import strip_data
from kvviz.figures.radix_tree import layout
from kvviz.figures.request_list import requests_html
from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.fragmentation.view import FragmentationView
from kvviz.nodes.paging.state import PagingState
from kvviz.nodes.radix.state import RadixState
from kvviz.nodes.radix.view import RadixView


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
    from kvviz.figures.request_list import why_lines

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
    shown = re.search(r'<span class="kv-prompt">…(.*?)</span>', out, re.S).group(1)
    assert len(shown) < len(r.prompt) and (" " + shown.replace("⏎", "\n")) in r.prompt  # (cut before a word)
    assert r.stop == "stop_token" and out.endswith(
        'title="stopped where the model wrote a word end (one of this request&#x27;s stop tokens)">…</span>')
    budget = FragmentationState(reserve=3).snapshot.requests[0]
    assert budget.stop != "stop_token" and shown_text(budget).endswith(
        'title="stopped by the engine, not ended by the model">…</span>')


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


def test_a_strip_s_fixed_columns_are_made_once_and_equal_those_placed_cell_by_cell():
    """strip_data takes a pool's positions, and what of its bars and stripes never changes, from
    `cells.grid` (read-only arrays, made once per pool size): the same columns, bit for bit, as
    `place`, `bar_data` and `hatch_data` make cell by cell, in every state of a node's run."""
    import numpy as np

    from kvviz.figures.block_strip import NARROW_PER_ROW, PER_ROW
    from kvviz.figures.cells import LAYOUTS, bar_data, cells_of, hatch_data, place
    from kvviz.web.sources import binary

    state = PagingState()
    state.add_request()
    snaps = [state.paged]
    while state.step():
        snaps += [state.paged, state.contiguous]
    assert len(snaps) > 10
    for snap in snaps:
        cells, bars, lines = strip_data.__wrapped__(snap, PER_ROW, NARROW_PER_ROW, True)
        want = {k: [r[k] for r in cells_of(snap)] for k in cells_of(snap)[0]}
        for suffix, width in zip(LAYOUTS, (PER_ROW, NARROW_PER_ROW), strict=True):
            place(want, suffix, [b.block_id % width + 0.5 for b in snap.blocks],
                  [b.block_id // width + 0.5 for b in snap.blocks])
        want_bars = bar_data(want, [b.num_tokens / snap.block_size for b in snap.blocks])
        for got, expected in ((cells, want), (bars, want_bars), (lines, hatch_data(want))):
            got, expected = binary(got), binary(expected)
            assert [k for k in got if k in expected] == list(expected)  # (in the same order: the same JSON)
            for k in set(expected) - {"read", "reads"}:
                a, b = np.asarray(got[k]), np.asarray(expected[k])
                assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), k
    again = strip_data.__wrapped__(snaps[0], PER_ROW, NARROW_PER_ROW, True)[0]["x"]
    assert again is strip_data.__wrapped__(snaps[1], PER_ROW, NARROW_PER_ROW, True)[0]["x"]
    assert not again.flags.writeable and binary({"x": again})["x"] is again  # (shared, never copied)


def test_a_page_table_s_blocks_are_placed_on_the_fixed_grid_as_block_by_block():
    """The page table's physical blocks (rows of PER_ROW from BLOCK_Y) take their fixed columns from
    `cells.grid` too: equal, bit for bit, to those `place`, `bar_data` and `hatch_data` make."""
    import numpy as np

    from kvviz.figures.block_strip import NARROW_PER_ROW, PER_ROW
    from kvviz.figures.cells import LAYOUTS, bar_data, hatch_data, place
    from kvviz.figures.page_table import block_xy, table_data
    from kvviz.web.sources import binary

    state = PagingState()
    state.add_request()
    state.step()
    state.add_request()
    for snap in (state.paged, state.contiguous):
        _pages, (blocks, bars, lines), _links = table_data.__wrapped__(snap, state.request)
        n = snap.metrics.blocks_total
        want = {k: list(v) for k, v in blocks.items() if k not in ("x", "y", "cw", "hw", "x_n", "y_n", "cw_n",
                                                                    "hw_n")}
        for suffix, per_row in zip(LAYOUTS, (PER_ROW, NARROW_PER_ROW), strict=True):
            place(want, suffix, *zip(*(block_xy(b, per_row) for b in range(n)), strict=True))
        want_bars = bar_data(want, [b.num_tokens / snap.block_size for b in snap.blocks])
        for got, expected in ((blocks, want), (bars, want_bars), (lines, hatch_data(want))):
            got, expected = binary(got), binary(expected)
            assert list(got) == list(expected)  # (in the same order: the same JSON)
            for k in expected:
                a, b = np.asarray(got[k]), np.asarray(expected[k])
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), k
        assert not blocks["y"].flags.writeable  # (the grid's: made once)
