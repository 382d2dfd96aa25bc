"""A request: its tokens, its block table, and where it is in its life."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from engine.util import deepcopy_int_lists

if TYPE_CHECKING:
    from engine.radix_cache import RadixNode

# The values of Stop and Status, as snapshots hold them (plain strings: RequestView.stop, .status).
StopName = Literal["", "budget", "stop_token", "context", "slab_full"]
StatusName = Literal["waiting", "running", "finished", "refused", "released"]


class Stop(StrEnum):
    """Why a finished request stopped generating (the model itself never ends a reply here)."""

    NONE = ""  # not finished
    BUDGET = "budget"  # it generated its max_new_tokens
    STOP_TOKEN = "stop_token"  # it sampled one of its stop tokens (not kept: the reply ends before it)
    CONTEXT = "context"  # it reached the model's context length
    SLAB_FULL = "slab_full"  # contiguous policy: every slot of its reserved slab holds KV


class Status(StrEnum):
    WAITING = "waiting"  # queued: not admitted yet, or preempted and waiting to be recomputed
    RUNNING = "running"  # holds blocks, generating
    FINISHED = "finished"  # done generating; still holds its KV until released
    REFUSED = "refused"  # could not be admitted (admission='refuse'); holds nothing
    RELEASED = "released"  # released by the caller; holds nothing


@dataclass(eq=False)
class Request:
    request_id: int
    prompt_ids: list[int]
    max_new_tokens: int
    reserve_blocks: int | None = None  # contiguous policy: blocks reserved at admission
    # A token of `stop_token_ids` sampled once the reply has `stop_after` tokens ends it there: the
    # stop token is not kept (as vLLM's `stop` strings are not, by default), so it never gets KV.
    stop_token_ids: frozenset[int] = frozenset()
    stop_after: int = 1
    output_ids: list[int] = field(default_factory=list)
    status: Status = Status.WAITING
    block_table: list[int] = field(default_factory=list)  # logical page -> physical block
    num_computed: int = 0  # tokens whose KV is in the cache: all_ids[:num_computed]
    num_prefix_hit: int = 0  # of those, tokens matched in the radix cache at the last admission
    num_preemptions: int = 0
    reason: str = ""  # why it was refused, preempted or finished, in words
    stop: Stop = Stop.NONE  # why it finished, as data
    radix_node: RadixNode | None = None  # the deepest radix node this request locks, if any

    def __deepcopy__(self, memo: dict[int, Any]) -> Request:
        return deepcopy_int_lists(self, memo, ("prompt_ids", "output_ids", "block_table"))

    @property
    def name(self) -> str:
        return f"R{self.request_id}"

    @property
    def all_ids(self) -> list[int]:
        return self.prompt_ids + self.output_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def last_token(self) -> int:
        return self.output_ids[-1] if self.output_ids else self.prompt_ids[-1]

    def tokens(self, start: int, end: int) -> list[int]:
        """all_ids[start:end], without building all_ids (0 <= start <= end <= num_tokens)."""
        n = len(self.prompt_ids)
        if start >= n:
            return self.output_ids[start - n : end - n]
        if end <= n:
            return self.prompt_ids[start:end]
        return self.prompt_ids[start:] + self.output_ids[: end - n]


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def check_request_args(max_new_tokens: int, reserve_blocks: int | None, stop_token_ids: Iterable[int],
                       stop_after: int, vocab_size: int) -> frozenset[int]:
    """A request's numbers checked (a ValueError in words for a bad one); its stop tokens as a set."""
    if not _whole(max_new_tokens, 1):
        raise ValueError(f"max_new_tokens must be a whole number >= 1, got {max_new_tokens!r}")
    if reserve_blocks is not None and not _whole(reserve_blocks, 1):
        raise ValueError(f"reserve_blocks must be a whole number >= 1, got {reserve_blocks!r}")
    stops = frozenset(stop_token_ids)
    if not all(_whole(t, 0) and t < vocab_size for t in stops):
        raise ValueError(f"stop_token_ids must be token ids from 0 to {vocab_size - 1}")
    if not _whole(stop_after, 1):
        raise ValueError(f"stop_after must be a whole number >= 1, got {stop_after!r}")
    return stops
