"""Explain it back's state: the student's answer, self-checks answered by real engines, the
facts of the three nodes' live snapshots, and every prediction of the session.

A self-check (kvviz/nodes/explain/checks.py) is a prediction: the student answers first, then
the engine's answer is computed on a copy of the node's engines and shown beside it. While a
check is open, the facts that would give its answer away are withheld. `predictions` collects
the nodes' predict-then-run answers and the self-checks, each a `ResolvedPrediction`
(kvviz/state/predict.py): what the download holds (as plain data) and what a class hands in.
"""

from __future__ import annotations

import param

from kvviz import formatting as fmt
from kvviz.nodes.explain import markdown
from kvviz.nodes.explain.checks import CHECKS, SelfCheck
from kvviz.nodes.explain.text import QUESTION
from kvviz.state.node import NodeState
from kvviz.state.predict import ResolvedPrediction

BY_KEY = {c.key: c for c in CHECKS}
TITLE = "Managing the KV cache: my answer"
HIDDEN = "(withheld until you answer the self-check about it below)"
# What a self-check says, as data: this state words it, and the played page (kvviz/export/
# checks.js) reads the same sentences from its recording.
SAY = {
    "verdict": "{head}: you said {predicted}, the engine says {outcome}. {why}",
    "right": "Right", "wrong": "Not quite",
    "again": "You answered this one already. ",
    "number": "Type a whole number of blocks or requests.",
    "none": "No answer with the nodes as they are now (move node 01's slider to 4 or more).",
}
# Each fact's node (a played page reads a node's facts from the state that node shows).
FACT_NODE = {"frag_use": "fragmentation", "frag_gap": "fragmentation", "paging": "paging",
             "radix_store": "radix", "radix_prefill": "radix"}


def withheld(fact: str) -> str:
    """A fact that would answer an open self-check, as it is shown until then."""
    return f"{fact.split(':')[0]}: {HIDDEN}"


class ExplainState(param.Parameterized):
    """The student's answer and self-checks, over the same session's three node states."""

    answer = param.String(default="", label="Your answer", doc="the student's explanation (plain text)")
    responses = param.Dict(default={}, doc="self-check key -> its ResolvedPrediction (see `predictions`)")
    feedback = param.Dict(default={}, doc="self-check key -> a sentence on the student's answer")
    predictions = param.List(default=[],
                             doc="every ResolvedPrediction: the nodes' own, then the self-checks'")

    def __init__(self, fragmentation: NodeState, paging: NodeState, radix: NodeState, **params):
        super().__init__(**params)
        self.fragmentation, self.paging, self.radix = fragmentation, paging, radix
        for node in self.nodes:
            node.param.watch(lambda _e: self._collect(), "predictions")
        self._collect()

    @property
    def nodes(self) -> tuple:
        return self.fragmentation, self.paging, self.radix

    def _collect(self) -> None:
        """The nodes' predictions, then the self-checks answered, in the order of CHECKS."""
        mine = [self.responses[c.key] for c in CHECKS if c.key in self.responses]
        self.predictions = [e for node in self.nodes for e in node.predictions] + mine

    # -- self-checks -------------------------------------------------------------------------
    def question(self, key: str) -> str:
        """Self-check `key`'s question, asked about the nodes as they are now."""
        return BY_KEY[key].ask(*self.nodes)

    def is_open(self, key: str) -> bool:
        """Not answered yet, for the question as it reads now (a changed node asks anew)."""
        done = self.responses.get(key)
        return done is None or done.question != self.question(key)

    def engine_answer(self, key: str) -> int | None:
        """What the engine does, computed on copies of the live engines (None: no answer now)."""
        return BY_KEY[key].answer(*self.nodes)

    def check(self, key: str, typed: str) -> bool:
        """Take the student's answer to self-check `key`, then show the engine's. An answer is
        committed: asking again shows the first answer (bad input keeps the check open)."""
        c: SelfCheck = BY_KEY[key]
        if not self.is_open(key):
            self._say(key, SAY["again"] + self._verdict(c, self.responses[key]))
            return self.responses[key].right
        number = fmt.whole_number(typed.strip())
        if number is None:
            self._say(key, SAY["number"])
            return False
        truth = self.engine_answer(key)
        if truth is None:
            self._say(key, SAY["none"])
            return False
        entry = ResolvedPrediction(node=c.node, question=self.question(key), predicted=str(number),
                                   outcome=str(truth), right=number == truth, why=c.why)
        self.param.update(responses={**self.responses, key: entry})
        self._say(key, self._verdict(c, entry))
        self._collect()
        return entry.right

    @staticmethod
    def _verdict(c: SelfCheck, entry: ResolvedPrediction) -> str:
        head = SAY["right"] if entry.right else SAY["wrong"]
        return SAY["verdict"].format(head=head, predicted=entry.predicted, outcome=entry.outcome, why=c.why)

    def _say(self, key: str, sentence: str) -> None:
        self.feedback = {**self.feedback, key: sentence}

    # -- facts ------------------------------------------------------------------------------
    def facts(self, withhold: bool = True) -> list[str]:
        """What the live state shows, one sentence per fact, all read from the snapshots; a fact
        that would answer an open self-check is withheld (`withhold`)."""
        hidden = {k for c in CHECKS if withhold and self.is_open(c.key) for k in c.hides}
        return [withheld(text) if key in hidden else text for key, text in self.fact_map().items()]

    def fact_map(self) -> dict[str, str]:
        """Every fact by its key (FACT_NODE), none withheld."""
        f, c = self.fragmentation.snapshot.metrics, self.paging.contiguous.metrics
        p, r = self.paging.paged.metrics, self.radix.snapshot.metrics
        facts = {
            "frag_use": f"Node 01 (contiguous, {self.fragmentation.reserve}-block reservations): "
                        f"{f.blocks_with_tokens} of {f.blocks_total} blocks hold tokens; "
                        f"{f.blocks_reserved_empty} are reserved but empty.",
            "frag_gap": f"Node 01's longest free gap: {f.largest_free_run} of {f.blocks_free} free blocks.",
            "paging": f"Node 02, same requests: the contiguous pool is {fmt.percent(c.utilisation)}% full "
                      f"and refused {c.rejected}; the paged pool is {fmt.percent(p.utilisation)}% full and "
                      f"refused {p.rejected}.",
            "radix_store": f"Node 03 (sharing {'on' if self.radix.sharing else 'off'}): {r.blocks_stored} "
                           f"blocks stored against {r.blocks_without_sharing} without sharing "
                           f"({fmt.percent(r.saved)}% saved).",
            "radix_prefill": f"Node 03's prefill computed {r.prefill_tokens_computed} prompt tokens and "
                             f"reused {r.prefix_hit_tokens} from the cache.",
        }
        return facts

    # -- the download -----------------------------------------------------------------------
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
            "predictions": [e.to_json() for e in self.predictions],
        }

    def markdown(self) -> str:
        """The download: a readable Markdown answer (kvviz/nodes/explain/markdown.py) with the state
        and every prediction as data at its end."""
        checks = [self.responses[c.key] for c in CHECKS if c.key in self.responses]
        made = [e for node in self.nodes for e in node.predictions]
        record = {"answer": self.answer, **self.state_record()}
        return markdown.document(TITLE, QUESTION, self.answer, checks, made, self.facts(), record)
