"""Explain it back's state: facts and self-check questions read from the three nodes' live snapshots.

The answers are never stored: each is read from the current snapshot when the student checks,
so they follow whatever the class did to the nodes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import param

from kvviz import formatting as fmt
from kvviz.nodes.explain.text import QUESTION
from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.paging.state import PagingState
from kvviz.nodes.radix.state import RadixState


@dataclass(frozen=True)
class SelfCheck:
    key: str
    question: str
    where: str  # the card that shows the answer, as a hint


CHECKS = (
    SelfCheck("reserved_empty", "How many blocks in node 01 are reserved but hold no token right now?",
              "node 01, the RESERVED · EMPTY card"),
    SelfCheck("naive_rejects", "How many requests has the contiguous (naive) pool in node 02 refused so far?",
              "node 02, the NAIVE REJECTS card"),
    SelfCheck("without_sharing", "How many blocks would node 03's live requests need without prefix sharing?",
              "node 03, the vs NO SHARING card"),
    SelfCheck("largest_gap", "What is the longest run of free blocks in node 01's pool, in blocks?",
              "node 01, the LARGEST GAP card (the first number)"),
)


class ExplainState(param.Parameterized):
    """The student's answer and self-checks, over the same session's three node states."""

    answer = param.String(default="", label="Your answer", doc="the student's explanation (plain text)")
    responses = param.Dict(default={}, doc="self-check key -> what the student typed")
    feedback = param.Dict(default={}, doc="self-check key -> a sentence saying right or not")

    def __init__(self, fragmentation: FragmentationState, paging: PagingState, radix: RadixState, **params):
        super().__init__(**params)
        self.fragmentation, self.paging, self.radix = fragmentation, paging, radix

    def truth(self, key: str) -> int:
        """The live answer to a self-check, read from the current snapshots."""
        frag = self.fragmentation.snapshot.metrics
        return {
            "reserved_empty": frag.blocks_reserved_empty,
            "naive_rejects": self.paging.contiguous.metrics.rejected,
            "without_sharing": self.radix.snapshot.metrics.blocks_without_sharing,
            "largest_gap": frag.largest_free_run,
        }[key]

    def check(self, key: str, typed: str) -> bool:
        """Check what the student typed for self-check `key`; the feedback says why."""
        check = next(c for c in CHECKS if c.key == key)
        typed = typed.strip()
        right = False
        number = fmt.whole_number(typed)
        if number is None:
            said = "Type a whole number of blocks or requests."
        elif number == (truth := self.truth(key)):
            right, said = True, f"Right: the engine says {truth} as well."
        else:
            said = f"Not quite. Look again at {check.where}."
        self.param.update(responses={**self.responses, key: typed}, feedback={**self.feedback, key: said})
        return right

    def facts(self) -> list[str]:
        """What the live state shows, one sentence per fact, all read from the snapshots."""
        f, c = self.fragmentation.snapshot.metrics, self.paging.contiguous.metrics
        p, r = self.paging.paged.metrics, self.radix.snapshot.metrics
        return [
            f"Node 01 (contiguous, {self.fragmentation.reserve}-block reservations): "
            f"{f.blocks_with_tokens} of {f.blocks_total} blocks hold tokens; {f.blocks_reserved_empty} are reserved "
            f"but empty; the longest free gap is {f.largest_free_run} of {f.blocks_free} free blocks.",
            f"Node 02, same requests: the contiguous pool is {fmt.percent(c.utilisation)}% full and refused "
            f"{c.rejected}; the paged pool is {fmt.percent(p.utilisation)}% full and refused {p.rejected}.",
            f"Node 03 (sharing {'on' if self.radix.sharing else 'off'}): {r.blocks_stored} blocks stored against "
            f"{r.blocks_without_sharing} without sharing ({fmt.percent(r.saved)}% saved); prefill computed "
            f"{r.prefill_tokens_computed} tokens and reused {r.prefix_hit_tokens} from the cache.",
        ]

    def state_record(self) -> dict:
        """The live state the answer refers to, as plain data."""
        def metrics(snap):
            m = snap.metrics
            return {k: getattr(m, k) for k in m.__dataclass_fields__ if k != "prefill_seconds"}

        return {
            "fragmentation": {"reserve": self.fragmentation.reserve, "freed_r2": self.fragmentation.freed_r2,
                              "metrics": metrics(self.fragmentation.snapshot)},
            "paging": {"added": list(self.paging.added), "contiguous": metrics(self.paging.contiguous),
                       "paged": metrics(self.paging.paged)},
            "radix": {"sharing": self.radix.sharing, "ops": [list(op) for op in self.radix.ops],
                      "metrics": metrics(self.radix.snapshot)},
        }

    def markdown(self) -> str:
        """The download: the question, the student's answer, self-checks, facts and the state."""
        lines = ["# Managing the KV cache: my answer", "", "## The question", "", QUESTION, "",
                 "## My answer", "", self.answer.strip() or "(no answer written yet)", "", "## Self-check", ""]
        for c in CHECKS:
            typed = self.responses.get(c.key, "")
            lines.append(f"- {c.question} I said: {typed or '(not answered)'}; the engine says: {self.truth(c.key)}.")
        lines += ["", "## What the live state showed", ""] + [f"- {x}" for x in self.facts()]
        lines += ["", "## The state, as data", "", "```json", json.dumps(self.state_record(), indent=2), "```", ""]
        return "\n".join(lines)
