"""The lesson's figures, read off the three scenarios' snapshots (docs/architecture.md, "Metrics").

These are the numbers the student sees; each comes from a real engine run on the default model.
"""

from __future__ import annotations

import pytest

from engine import Engine, EngineConfig
from kvviz import formatting as fmt
from kvviz.nodes.fragmentation.scenario import FragmentationScenario
from kvviz.nodes.paging.recipe import ADDS
from kvviz.nodes.paging.scenario import PagingScenario
from kvviz.nodes.prompts import MORE_QUESTIONS, QUESTIONS, SYSTEM_PROMPT
from kvviz.nodes.radix.scenario import (
    SYSTEM_PROMPT_BLOCKS,
    UNIQUE_BLOCKS,
    RadixScenario,
)
from kvviz.nodes.scenario_base import BLOCK_SIZE, max_new_for

PAGING_ADDS = 10  # requests added one at a time to node 02's two pools, after its initial two


@pytest.fixture(scope="module")
def fragmentation():
    return FragmentationScenario().snapshot()


@pytest.fixture(scope="module")
def fragmentation_after_free_r2():
    node = FragmentationScenario()
    long_request = node.free_r2()
    return node.snapshot(), long_request


@pytest.fixture(scope="module")
def radix_off():
    return RadixScenario(prefix_sharing=False).snapshot()


@pytest.fixture(scope="module")
def radix_on():
    return RadixScenario(prefix_sharing=True).snapshot()


@pytest.fixture(scope="module")
def paging_history():
    """(contiguous metrics, paged metrics) at the start and after each of PAGING_ADDS adds."""
    node = PagingScenario()
    history = [(node.contiguous.snapshot().metrics, node.paged.snapshot().metrics)]
    for _ in range(PAGING_ADDS):
        node.add(*node.next_request())
        history.append((node.contiguous.snapshot().metrics, node.paged.snapshot().metrics))
    return history


# -- node 01: why the cache wastes memory -------------------------------------------------------


def test_fragmentation_in_use_is_12_of_32_blocks_or_38_percent(fragmentation):
    m = fragmentation.metrics
    assert (m.blocks_with_tokens, m.blocks_total) == (12, 32)
    assert round(100 * m.in_use_fraction) == 38


def test_fragmentation_reserved_but_empty_is_12_blocks(fragmentation):
    assert fragmentation.metrics.blocks_reserved_empty == 12


def test_fragmentation_largest_gap_is_8_of_8_free(fragmentation):
    m = fragmentation.metrics
    assert (m.largest_free_run, m.blocks_free) == (8, 8)


def test_fragmentation_requests_each_hold_4_blocks_of_real_tokens(fragmentation):
    for name in ("R1", "R2", "R3"):
        view = fragmentation.request(name)
        states = [fragmentation.blocks[b].state for b in view.block_table]
        assert states == ["tokens"] * 4 + ["reserved"] * 4
        assert (view.status, view.num_computed) == ("finished", 60)
        assert len(view.generated) > 0


def test_freeing_r2_leaves_8_of_16_free_in_the_largest_gap(fragmentation_after_free_r2):
    snap, _ = fragmentation_after_free_r2
    assert (snap.metrics.largest_free_run, snap.metrics.blocks_free) == (8, 16)


def test_after_freeing_r2_a_longer_slab_is_refused_for_external_fragmentation(fragmentation_after_free_r2):
    snap, long_request = fragmentation_after_free_r2
    view = snap.request(long_request)
    assert view.status == "refused"
    assert "external fragmentation" in view.reason
    assert "16 blocks are free" in view.reason
    assert snap.metrics.rejected == 1


@pytest.mark.parametrize("reserve_blocks, empty", [(4, 0), (6, 6), (10, 18)])
def test_reserved_length_sets_the_empty_reserved_blocks(reserve_blocks, empty):
    m = FragmentationScenario(reserve_blocks=reserve_blocks).snapshot().metrics
    assert (m.blocks_with_tokens, m.blocks_reserved_empty) == (12, empty)


# -- node 02: PagedAttention ----------------------------------------------------------------------


def test_paging_contiguous_pool_rejects_nothing_at_the_start(paging_history):
    contiguous, paged = paging_history[0]
    assert (contiguous.rejected, paged.rejected) == (0, 0)


def test_paging_contiguous_pool_rejects_while_the_paged_pool_keeps_admitting(paging_history):
    first_reject = next(i for i, (c, _) in enumerate(paging_history) if c.rejected > 0)
    assert len(paging_history) - first_reject >= 5  # the paged pool is watched for 4 or more adds after
    assert all(p.rejected == 0 for _, p in paging_history)
    assert paging_history[-1][0].rejected == len(paging_history) - first_reject


def test_paging_opens_at_67_percent_contiguous_89_percent_paged_and_no_rejects(paging_history):
    contiguous, paged = paging_history[0]
    assert (fmt.full(contiguous), fmt.full(paged), fmt.rejects(contiguous)) == ("67% full", "89% full", "0")
    # two requests of 63 and 65 tokens: 2 six-block slabs (192 slots), or 4 + 5 pages (144 slots)
    assert (contiguous.tokens_held, contiguous.slots_locked, paged.slots_locked) == (128, 192, 144)


def test_paging_paged_pool_stays_at_least_85_percent_full_over_the_recorded_adds(paging_history):
    assert len(paging_history) - 1 >= ADDS  # every Add request of the static export's recording
    assert all(fmt.percent(p.utilisation) >= 85 for _, p in paging_history)
    assert all(fmt.percent(c.utilisation) < 70 for c, _ in paging_history)


def test_paging_says_the_rest_is_one_partial_page_per_request(paging_history):
    _, paged = paging_history[0]
    assert fmt.page_tails(paged) == (
        "Where the rest goes: 16 of the paged pool's 144 token slots are empty, the unfilled end of the last "
        "page of its 2 requests: never more than one part-filled page for each request.")
    for _, p in paging_history:  # never more than one partial page per request
        assert p.slots_locked - p.tokens_held < 16 * (p.num_running + p.num_finished)


def test_paging_paged_pool_is_better_utilised_than_the_contiguous_one(paging_history):
    for contiguous, paged in paging_history:
        assert paged.utilisation > contiguous.utilisation


# -- node 03: RadixAttention ----------------------------------------------------------------------


def test_radix_without_sharing_stores_36_blocks_and_saves_nothing(radix_off):
    m = radix_off.metrics
    assert (m.blocks_stored, m.blocks_without_sharing, m.saved) == (36, 36, 0.0)


def test_radix_with_sharing_stores_18_of_36_blocks_saving_half(radix_on):
    m = radix_on.metrics
    assert (m.blocks_stored, m.blocks_without_sharing) == (18, 36)
    assert m.saved == pytest.approx(0.5)


def test_radix_sharing_computes_fewer_prefill_tokens(radix_off, radix_on):
    off, on = radix_off.metrics, radix_on.metrics
    assert on.prefill_tokens_computed < off.prefill_tokens_computed
    assert on.prefix_hit_tokens == 3 * 96  # three requests reuse the 6-block system prompt
    assert on.prefill_tokens_computed + on.prefix_hit_tokens == off.prefill_tokens_computed


def test_radix_sharing_does_not_change_the_generated_text(radix_off, radix_on):
    assert [r.text for r in radix_on.requests] == [r.text for r in radix_off.requests]


def test_radix_tree_holds_the_system_prompt_once(radix_on):
    roots = [n for n in radix_on.radix if n.parent_id == 0]
    assert len(roots) == 1
    assert roots[0].text == SYSTEM_PROMPT
    assert len(roots[0].blocks) == 6


@pytest.mark.parametrize("question", QUESTIONS + MORE_QUESTIONS)
def test_radix_answers_end_at_a_word_end_in_the_same_blocks(question):
    """Each answer stops at the first word end past the fewest tokens that fill its blocks (the
    model's own greedy continuation decides where that is: one run, the engine's stop tokens),
    never below the blocks its budget fills."""
    prompt, max_new, stop_after = RadixScenario.request_for(question)
    assert max_new == max_new_for(prompt, (SYSTEM_PROMPT_BLOCKS + UNIQUE_BLOCKS) * BLOCK_SIZE - 4)
    node = RadixScenario()
    node.ask(question)
    [answer] = [r for r in node.snapshot().requests if r.prompt == prompt][-1:]
    longer = Engine(EngineConfig(num_blocks=16, block_size=BLOCK_SIZE)).generate([prompt], max_new)[0].text
    n = len(answer.generated)
    assert longer.startswith(answer.generated) and stop_after <= n <= max_new
    if n < max_new:  # (stopped by a word end: the first one past `stop_after`)
        assert answer.stop == "stop_token" and longer[n] in " \n.,;:!?)"
        assert not any(c in " \n.,;:!?)" for c in longer[stop_after:n])
    assert len(answer.block_table) == SYSTEM_PROMPT_BLOCKS + UNIQUE_BLOCKS
