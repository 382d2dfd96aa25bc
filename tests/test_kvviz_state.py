"""The lesson's state classes, without a browser: each action changes the right engine state and
the right metric text (the exact strings the metric cards show)."""

from __future__ import annotations

import json

from kvviz_support import play_until_idle

from kvviz import formatting as fmt
from kvviz import urlstate
from kvviz.nodes.explain.state import ExplainState
from kvviz.nodes.fragmentation.scenario import FragmentationScenario
from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.paging.scenario import PagingScenario
from kvviz.nodes.paging.state import PagingState
from kvviz.nodes.radix.scenario import RadixScenario
from kvviz.nodes.radix.state import RadixState


# -- formatting -----------------------------------------------------------------------------
def test_percent_rounds_halves_up():
    assert fmt.percent(0.375) == 38
    assert fmt.percent(0.125) == 13
    assert fmt.percent(0.5) == 50


def test_printable_makes_control_bytes_visible_and_keeps_markup_literal(hostile):
    assert fmt.printable("a\x00b\nc\ufffd") == "a·b⏎c·"
    assert fmt.printable(hostile) == hostile


def test_block_ranges_compresses_runs():
    assert fmt.block_ranges((0, 1, 2, 5, 7, 8)) == "0–2, 5, 7–8"


def test_check_prompt_refuses_empty_and_too_long():
    assert "empty" in fmt.check_prompt("   ")
    assert "201 characters" in fmt.check_prompt("x" * 201)
    assert fmt.check_prompt("x" * 200) is None


# -- node 01 --------------------------------------------------------------------------------
def test_fragmentation_defaults_show_the_lesson_figures(frag):
    m = frag.snapshot.metrics
    assert (fmt.in_use(m), fmt.reserved_empty(m), fmt.largest_gap(m)) == ("12 / 32 · 38%", "12 blk", "8 / 8 free")


def test_reserved_length_slider_rebuilds_the_pool_with_that_reservation(frag):
    frag.reserve = 16
    expected = FragmentationScenario(16).snapshot().metrics
    assert fmt.in_use(frag.snapshot.metrics) == fmt.in_use(expected) != "12 / 32 · 38%"
    assert fmt.reserved_empty(frag.snapshot.metrics) == fmt.reserved_empty(expected)
    assert all(len(r.block_table) in (0, 16) for r in frag.snapshot.requests)


def test_free_r2_opens_a_gap_and_the_long_request_is_refused(frag):
    frag.free_r2()
    assert fmt.largest_gap(frag.snapshot.metrics) == "8 / 16 free"
    refused = [r for r in frag.snapshot.requests if r.status == "refused"]
    assert len(refused) == 1 and "external fragmentation" in refused[0].reason
    assert frag.freed_r2


def test_free_r2_twice_says_so_and_changes_nothing(frag):
    frag.free_r2()
    before = frag.snapshot
    frag.free_r2()
    assert "already freed" in frag.notice
    assert frag.snapshot == before


def test_reset_returns_to_the_defaults(frag):
    frag.reserve = 3
    frag.free_r2()
    frag.reset()
    assert (frag.reserve, frag.freed_r2) == (8, False)
    assert fmt.in_use(frag.snapshot.metrics) == "12 / 32 · 38%"


def test_rewind_queues_the_requests_with_no_tokens_and_step_fills_blocks(frag):
    frag.rewind()
    m = frag.snapshot.metrics
    assert (m.tokens_held, m.num_waiting, frag.step_count) == (0, 3, 0)
    frag.step()
    assert frag.snapshot.metrics.tokens_held > 0 and frag.step_count == 1


def test_step_back_replays_to_the_previous_step(frag):
    frag.rewind()
    for _ in range(3):
        frag.step()
    before = frag.snapshot
    frag.step()
    assert frag.snapshot != before
    frag.step_back()
    assert frag.snapshot == before and frag.step_count == 3


def test_step_at_idle_says_nothing_is_left(frag):
    assert not frag.step()
    assert "Nothing left" in frag.notice


def test_play_from_idle_rewinds_then_ticks_until_idle(frag):
    frag.toggle_play()
    assert frag.playing and frag.step_count == 0
    for _ in range(200):
        frag.tick()
        if not frag.playing:
            break
    assert not frag.playing
    assert fmt.in_use(frag.snapshot.metrics) == "12 / 32 · 38%"


# -- node 02 --------------------------------------------------------------------------------
def test_paging_starts_with_no_naive_rejects(paging):
    assert fmt.rejects(paging.contiguous.metrics) == "0"
    assert fmt.full(paging.paged.metrics).endswith("% full")


def test_add_request_eventually_makes_the_naive_pool_reject_while_paged_admits(paging):
    for _ in range(3):
        assert paging.add_request(settle=True)
    assert int(fmt.rejects(paging.contiguous.metrics)) >= 1
    assert paging.paged.metrics.rejected == 0
    assert len(paging.added) == 3


def test_add_request_refills_the_box_with_the_next_prompt_and_shows_its_table(paging):
    first = paging.prompt
    paging.add_request()
    assert paging.paged.requests[-1].prompt == first
    assert paging.prompt != first
    assert paging.request == paging.paged.requests[-1].name


def test_add_request_computes_the_prompt_at_once_then_plays_token_by_token(paging):
    steps = paging.step_count
    assert paging.add_request()
    new = paging.paged.requests[-1]
    assert paging.playing and paging.step_count == steps + 1
    assert new.status == "running" and new.num_computed >= new.num_prompt_tokens
    slab = [r for r in paging.contiguous.requests if r.name == new.name][0]
    assert len(slab.block_table) == PagingScenario.RESERVE_BLOCKS  # the slab is reserved whole at admission
    assert len(new.block_table) < PagingScenario.RESERVE_BLOCKS  # the pages only as the tokens need them
    generated = [paging.paged.requests[-1].num_tokens]
    while paging.playing:
        paging.tick()
        generated.append(paging.paged.requests[-1].num_tokens)
    assert generated == sorted(generated) and generated[-1] > generated[0]  # one token per tick
    assert paging.paged.requests[-1].status == "finished"


def test_playing_an_add_to_idle_ends_where_a_settled_add_does(paging):
    settled = PagingState()
    settled.add_request(settle=True)
    paging.add_request()
    assert play_until_idle(paging) > 1
    assert paging.paged == settled.paged and paging.contiguous == settled.contiguous
    assert "Nothing left to run" in paging.notice


def test_add_while_playing_joins_the_running_batch_without_an_extra_step(paging):
    paging.add_request()
    steps = paging.step_count
    paging.add_request()
    assert paging.step_count == steps and paging.playing
    assert paging.paged.requests[-1].status == "waiting"
    paging.tick()  # admitted next to the one already decoding: continuous batching
    assert [r.status for r in paging.paged.requests[-2:]] == ["running", "running"]


def test_hostile_prompt_is_stored_verbatim(paging, hostile):
    assert paging.add_request(hostile)
    assert paging.paged.requests[-1].prompt == hostile
    assert paging.added[-1] == hostile


def test_empty_and_too_long_prompts_get_a_message_and_change_nothing(paging):
    before = paging.paged
    assert not paging.add_request("")
    assert "empty" in paging.notice
    assert not paging.add_request("y" * 201)
    assert "limit" in paging.notice
    assert paging.paged is before and paging.added == []


def test_engine_refusal_of_a_prompt_is_a_notice_and_leaves_both_pools_unchanged(paging):
    n = (len(paging.contiguous.requests), len(paging.paged.requests))
    assert not paging.add_request("😀" * 150)  # 600 bytes: more than the pool can hold
    assert paging.notice.startswith("That did not work")
    assert (len(paging.contiguous.requests), len(paging.paged.requests)) == n


def test_step_back_through_several_adds_undoes_one_step_of_both_pools_at_a_time(paging):
    for _ in range(3):
        paging.add_request(settle=True)
    per_pool = [t.steps_before() + [t.trailing_steps] for t in paging.timelines]
    history = sum(max(steps) for steps in zip(*per_pool, strict=True))  # the pools step together
    backs = 0
    while paging.step_back():
        backs += 1
        adds = {sum(op.kind == "add" for op in t.ops) for t in paging.timelines}
        assert len(adds) == 1  # both pools always hold the same requests
    assert backs == history and paging.step_count == 0


def test_stepping_back_past_an_add_then_running_on_is_the_state_without_that_add(paging):
    two = PagingState()
    for state in (paging, two):
        for _ in range(2):
            state.add_request(settle=True)
    paging.add_request(settle=True)
    while len(paging.added) == 3:
        paging.step_back()
    paging.settle()
    assert (paging.contiguous, paging.paged) == (two.contiguous, two.paged)


# -- node 03 --------------------------------------------------------------------------------
def test_radix_sharing_off_then_on(radix):
    m = radix.snapshot.metrics
    assert (fmt.blocks_stored(m), fmt.without_sharing(m), fmt.saved(m)) == ("36 blk", "36 blk", "0%")
    radix.sharing = True
    m = radix.snapshot.metrics
    assert (fmt.blocks_stored(m), fmt.without_sharing(m), fmt.saved(m)) == ("18 blk", "36 blk", "50%")
    assert m.prefix_hit_tokens > 0


def test_ask_appends_the_question_to_the_system_prompt(radix, hostile):
    assert radix.add_request(hostile, settle=True)
    last = radix.snapshot.requests[-1]
    assert last.prompt == RadixScenario.request_for(hostile)[0]
    assert RadixScenario.question_of(last.prompt) == hostile
    assert radix.ops == [("ask", hostile)]


def test_release_oldest_leaves_cached_idle_blocks_when_sharing(radix):
    radix.sharing = True
    assert radix.release_oldest()
    assert radix.snapshot.metrics.blocks_cached_idle > 0
    assert radix.snapshot.requests[0].status == "released"


def test_fill_the_pool_evicts_idle_prefixes_when_sharing(radix):
    radix.sharing = True
    for _ in range(4):
        radix.release_oldest()
    radix.fill_pool()
    assert radix.snapshot.metrics.evicted_blocks > 0
    assert any(e.kind == "block_evicted" for e in radix.snapshot.events)


def test_toggling_sharing_replays_the_students_questions(radix):
    radix.add_request("Why pages?")
    radix.sharing = True
    assert RadixScenario.question_of(radix.snapshot.requests[-1].prompt) == "Why pages?"
    assert radix.snapshot.metrics.blocks_without_sharing > 36


# -- explain it back ------------------------------------------------------------------------
def test_self_checks_read_the_live_state(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    assert ex.check("reserved_empty", "12")
    assert "Right" in ex.feedback["reserved_empty"]
    frag.reserve = 16
    assert not ex.check("reserved_empty", "12")
    assert "Not quite" in ex.feedback["reserved_empty"]
    assert ex.truth("without_sharing") == RadixScenario().snapshot().metrics.blocks_without_sharing
    assert not ex.check("naive_rejects", "lots")
    assert "whole number" in ex.feedback["naive_rejects"]


def test_self_check_answer_that_python_would_choke_on_gets_a_message(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    for typed in ("²", "9" * 5000):
        assert not ex.check("reserved_empty", typed)
        assert "whole number" in ex.feedback["reserved_empty"]


def test_download_holds_the_answer_and_the_state(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    ex.answer = "Paging is like virtual memory."
    md = ex.markdown()
    assert "Paging is like virtual memory." in md
    record = json.loads(md.split("```json\n")[1].split("```")[0])
    assert record["fragmentation"]["metrics"]["blocks_reserved_empty"] == 12
    assert record["radix"]["metrics"]["blocks_without_sharing"] == 36


def test_step_back_past_free_r2_clears_it(frag):
    frag.free_r2()
    while frag.freed_r2 and frag.step_back():
        pass
    assert not frag.freed_r2
    assert urlstate.query(None, {'fragmentation': frag, 'paging': PagingState(), 'radix': RadixState()}) == ""


def test_rewind_drops_the_students_additions_from_the_link(paging, radix):
    paging.add_request("mine")
    radix.add_request("Mine?")
    assert paging.added == ["mine"] and radix.ops == [("ask", "Mine?")]
    paging.rewind()
    radix.rewind()
    assert paging.added == [] and radix.ops == []


def test_free_r2_with_nothing_to_free_is_a_notice_not_an_error():
    frag = FragmentationState(reserve=1)  # every slab is too short: all three are refused
    frag.free_r2()
    assert "already refused" in frag.notice and not frag.freed_r2
    frag.reserve = 8
    frag.free_r2()
    frag.reserve = 1
    assert "no R2 to free" in frag.notice and not frag.freed_r2
