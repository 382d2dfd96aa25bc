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
import functools
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


# A check's answer is a real engine run, and a pure function of what its arguments name: the node's
# set-up (its scenario class) and the settings below, which the lesson's runs share (node 01's 32
# recorded branches have a handful of slab lengths; every student asks about the same few). Each is
# run once per process and set of settings (the last `ANSWERS_KEPT`), then read back.
ANSWERS_KEPT = 64


@functools.lru_cache(maxsize=ANSWERS_KEPT)
def _gap_after_free_of(kind: type, reserve: int) -> int | None:
    scenario = new_scenario(kind, reserve)
    try:
        scenario.free_r2()
    except (ValueError, KeyError):
        return None  # too short a slab: R2 was refused, there is nothing to free
    return scenario.snapshot().metrics.largest_free_run


def _gap_after_free(frag, _paging, _radix) -> int | None:
    return _gap_after_free_of(type(frag.scenario), frag.reserve)


@functools.lru_cache(maxsize=ANSWERS_KEPT)
def _empty_of(kind: type, reserve: int) -> int:
    return new_scenario(kind, reserve).snapshot().metrics.blocks_reserved_empty


def _empty_with_other_reserve(frag, _paging, _radix) -> int:
    return _empty_of(type(frag.scenario), _other_reserve(frag))


def _admitted_before_refusal(_frag, paging, _radix) -> int | None:
    scenario = copy_scenario(paging.scenario)
    scenario.run_until_idle()
    refused = scenario.contiguous.snapshot().metrics.rejected
    for n in range(MAX_ADDS):
        scenario.add(*scenario.next_request())
        if scenario.contiguous.snapshot().metrics.rejected > refused:
            return n
    return None


@functools.lru_cache(maxsize=ANSWERS_KEPT)
def _stored_of(kind: type, sharing: bool, ops: tuple[tuple[str, str], ...]) -> int:
    # (as RadixState._rebuild does)
    scenario = new_scenario(kind, sharing)
    for op, question in ops:
        with contextlib.suppress(ValueError, KeyError):  # (an op that fails is dropped, as the node does)
            scenario.ask(question) if op == "ask" else scenario.release_oldest()
    return scenario.snapshot().metrics.blocks_stored


def _stored_with_sharing_switched(_frag, _paging, radix) -> int:
    return _stored_of(type(radix.scenario), not radix.sharing, tuple(map(tuple, radix.ops)))


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
