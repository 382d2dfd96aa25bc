"""The lesson's state classes, without a browser: each action changes the right engine state and
the right metric text (the exact strings the metric cards show)."""

from __future__ import annotations

from kvviz_support import play_until_idle

from kvviz import formatting as fmt
from kvviz import urlstate
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
    assert (fmt.in_use(m), fmt.reserved_empty(m), fmt.largest_gap(m)) == ("12 / 32 · 38%", "12 blk",
                                                                          "8 / 8 free")


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


def test_free_r2_mid_run_first_runs_the_three_to_the_end_so_it_draws_what_its_link_does(frag):
    linked = FragmentationState()
    linked.free_r2()
    frag.rewind()
    frag.step()
    frag.free_r2()
    assert (frag.snapshot == linked.snapshot
            and frag.notice.startswith("R1, R2 and R3 were run to the end first"))


def test_notices_say_where_and_how_loud(frag, paging):
    frag.step()  # at idle: information, next to the transport
    assert (frag.notice_at, frag.notice_level) == ("transport", "info")
    assert not paging.add_request("")  # a bad prompt: a warning, next to the box and its button
    assert (paging.notice_at, paging.notice_level) == ("controls", "warning")
    frag.free_r2()
    frag.free_r2()
    assert (frag.notice_at, frag.notice_level) == ("controls", "warning") and "already freed" in frag.notice


def test_a_step_lights_what_it_read_and_any_other_action_clears_it(frag):
    frag.rewind()
    frag.step()
    assert frag.show_reads
    frag.reserve = 9
    assert not frag.show_reads


# -- node 02 --------------------------------------------------------------------------------
def test_paging_starts_with_no_naive_rejects(paging):
    assert fmt.rejects(paging.contiguous.metrics) == "0"
    assert (fmt.full(paging.contiguous.metrics), fmt.full(paging.paged.metrics)) == ("67% full", "89% full")


def test_add_request_eventually_makes_the_naive_pool_reject_while_paged_admits(paging):
    for _ in range(4):  # 20 free blocks: three more 6-block slabs, then a refusal
        assert paging.add_request(settle=True)
    assert int(fmt.rejects(paging.contiguous.metrics)) == 1
    assert paging.paged.metrics.rejected == 0
    assert len(paging.added) == 4


def test_paging_question_gives_the_free_blocks_so_the_first_add_is_no_trap(paging):
    assert "has 20 free blocks" in paging.question().text
    assert paging.predict("admitted")
    assert paging.add_request(settle=True)
    assert paging.predictions[-1].right  # 20 free >= one 6-block slab: admitted, as the page says
    for _ in range(2):
        paging.add_request(settle=True)
    assert "has 2 free blocks" in paging.question().text
    assert paging.predict("refused") and paging.add_request(settle=True)
    assert paging.predictions[-1].right


def test_add_request_refills_the_box_with_the_next_prompt_and_shows_its_table(paging):
    first = paging.prompt
    paging.add_request()
    assert paging.paged.requests[-1].prompt == first
    assert paging.prompt != first
    assert paging.request == paging.paged.requests[-1].name


def test_reset_draws_the_first_requests_block_table_as_a_new_page_does(paging):
    # (a recorded page opens on a reset state: its block table must not be blank, issue 28 item 1)
    new = PagingState()
    paging.add_request(settle=True)
    paging.reset()
    assert new.request == paging.request == paging.paged.requests[0].name
    assert paging.paged.request(paging.request).block_table


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


# -- stepping back, rewinding ---------------------------------------------------------------------
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
    frag.free_r2()  # (its button is off and says why; a keyboard or a script gets the same reason)
    assert "R2 holds no slab" in frag.notice and not frag.freed_r2
    frag.reserve = 8
    frag.free_r2()
    frag.reserve = 1
    assert "no R2 to free" in frag.notice and not frag.freed_r2


def test_step_back_keeps_both_pools_on_the_same_requests(paging):
    """Node 02 adds every request to both pools; stepping back past a request added after one
    pool's last step used to drop it from that pool only (and the URL code then failed)."""
    for _ in range(3):
        assert paging.add_request(settle=True)
    while paging.step_back():
        prompts = [[op.prompt for op in t.ops if op.kind == "add"] for t in paging.scenario.timelines]
        assert prompts[0] == prompts[1]
        assert len(paging.added_gaps) == len(paging.added)
    assert paging.step_count == 0


def test_node_02s_block_table_choices_are_set_only_when_the_requests_change():
    state = PagingState()
    seen = []
    state.param.watch(lambda e: seen.append(list(e.new)), "request", what="objects")
    state.step_back()
    state.rewind()  # (the same requests, fewer tokens)
    assert seen == []
    assert state.add_request("A new request to the pool", settle=True)
    assert seen == [[r.name for r in state.paged.requests]]
    assert list(state.param.request.objects) == seen[0]
