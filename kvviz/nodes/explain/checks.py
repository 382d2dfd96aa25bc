"""Explain it back's self-checks: predictions and reasoning, each answered by a real engine.

A check asks what would happen if something were done to a node ("R2 is freed: what will
LARGEST GAP read?"); its answer is computed by doing it on a copy of that node's live engines
(`copy_scenario`, or the node's set-up built again with another setting), never on the node
itself, and only after the student has answered. The question's numbers come from the live
state, so a changed node asks a new question. `hides` names the facts (ExplainState.facts)
that would give the answer away while the check is open. A node's set-up is its own state's
scenario class (`type(state.scenario)`): this package imports no other node's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from kvviz.nodes.scenario_base import copy_scenario, new_scenario

MAX_ADDS = 32  # node 02's "how many more" check gives up after this many requests


@dataclass(frozen=True)
class SelfCheck:
    key: str
    node: str
    ask: Callable  # (fragmentation, paging, radix) -> the question, from the live state
    answer: Callable  # (fragmentation, paging, radix) -> the engine's answer (an int), or None
    why: str  # the reasoning, shown once answered
    hides: tuple[str, ...] = ()


def _other_reserve(frag) -> int:
    return 10 if frag.reserve != 10 else 6


def _gap_after_free(frag, _paging, _radix) -> int | None:
    scenario = new_scenario(type(frag.scenario), frag.reserve)
    try:
        scenario.free_r2()
    except (ValueError, KeyError):
        return None  # too short a slab: R2 was refused, there is nothing to free
    return scenario.snapshot().metrics.largest_free_run


def _empty_with_other_reserve(frag, _paging, _radix) -> int:
    return new_scenario(type(frag.scenario), _other_reserve(frag)).snapshot().metrics.blocks_reserved_empty


def _admitted_before_refusal(_frag, paging, _radix) -> int | None:
    scenario = copy_scenario(paging.scenario)
    scenario.run_until_idle()
    refused = scenario.contiguous.snapshot().metrics.rejected
    for n in range(MAX_ADDS):
        scenario.add(*scenario.next_request())
        if scenario.contiguous.snapshot().metrics.rejected > refused:
            return n
    return None


def _stored_with_sharing_switched(_frag, _paging, radix) -> int:  # (as RadixState._rebuild does)
    scenario = new_scenario(type(radix.scenario), not radix.sharing)
    for kind, question in radix.ops:
        with contextlib.suppress(ValueError, KeyError):  # (an op that fails is dropped, as the node does)
            scenario.ask(question) if kind == "ask" else scenario.release_oldest()
    return scenario.snapshot().metrics.blocks_stored


CHECKS = (
    SelfCheck(
        "gap_after_free", "fragmentation",
        lambda f, p, r: (f"Node 01, {f.reserve}-block slabs, all three replies done: R2 is released. What "
                         "will LARGEST GAP read then (the longest run of free blocks)?"),
        _gap_after_free,
        "Freeing a slab opens a hole exactly its length, wherever it sat; it joins the free tail only if it "
        "touches it.", hides=("frag_gap",)),
    SelfCheck(
        "empty_other_reserve", "fragmentation",
        lambda f, p, r: (f"If node 01's slabs were {_other_reserve(f)} blocks instead of {f.reserve}, how "
                         "many blocks would be reserved but hold no token?"),
        _empty_with_other_reserve,
        "Each reply fills the same 4 blocks whatever its slab; the rest of every slab that fits is empty, "
        "and a slab that does not fit is refused and wastes nothing."),
    SelfCheck(
        "adds_before_refusal", "paging",
        lambda f, p, r: ("Node 02: press Add request again and again (the lesson's next prompts). How many "
                         "more requests will the contiguous pool admit before it refuses one?"),
        _admitted_before_refusal,
        "Each request locks a whole slab at once, so the contiguous pool runs out of long-enough gaps long "
        "before its blocks are full of tokens."),
    SelfCheck(
        "stored_switched", "radix",
        lambda f, p, r: (f"Node 03 with prefix sharing switched {'off' if r.sharing else 'on'}, same "
                         "questions: how many blocks would the live requests store (BLOCKS STORED)?"),
        _stored_with_sharing_switched,
        "With sharing, the system prompt's full blocks are stored once for every request that starts with "
        "them; without, once per request.", hides=("radix_store",)),
)
