"""Node 03's state: prefix sharing, the student's questions and releases (param only, no Panel)."""

from __future__ import annotations

import contextlib

import param

from engine import Snapshot
from kvviz import formatting as fmt
from kvviz.nodes.prompts import MORE_QUESTIONS, QUESTIONS
from kvviz.nodes.radix import text
from kvviz.nodes.radix.scenario import RadixScenario
from kvviz.nodes.scenario_base import new_scenario
from kvviz.state.node import Added, NodeState
from kvviz.state.predict import Question


class RadixState(NodeState):
    """One paged 48-block pool; requests share a system prompt when sharing is on."""

    key = "radix"
    sharing = param.Boolean(default=False, label="Prefix sharing", doc="share cached prefix blocks")
    prompt = param.String(default=MORE_QUESTIONS[0], label="Your question",
                          doc="appended to the shared system prompt")
    ops = param.List(default=[], doc="('ask', question) and ('release', '') since the defaults")
    op_gaps = param.List(default=[], item_type=str, doc="per op, the engine steps taken before it")
    snapshot = param.ClassSelector(class_=Snapshot, doc="the pool now")

    def __init__(self, **params):
        super().__init__(**params)
        self.scenario = new_scenario(RadixScenario, self.sharing)
        self._refresh()

    def _snapshots(self) -> dict:
        return {"snapshot": self.scenario.snapshot(), "ops": self._ops_since_defaults(),
                "op_gaps": self._gaps(len(QUESTIONS))}

    def _ops_since_defaults(self) -> list[tuple[str, str]]:
        """The student's asks and releases, read from the timeline (Step back can drop some)."""
        ops = [("ask", RadixScenario.question_of(op.prompt)) if op.kind == "add" else ("release", "")
               for op in self.scenario.timeline.ops if op.kind in ("add", "release")]
        return ops[len(QUESTIONS):]

    @staticmethod
    def _next_question(ops) -> str:
        asked = sum(kind == "ask" for kind, _ in ops)
        return MORE_QUESTIONS[asked % len(MORE_QUESTIONS)]

    def _apply(self, kind: str, text: str, run: bool = True) -> None:
        if kind == "ask":
            self.scenario.ask(text, run=run)
        else:
            self._release_oldest()

    def _release_oldest(self) -> None:
        self.scenario.release_oldest()

    @param.depends("sharing", watch=True)
    def _rebuild(self) -> None:
        if self.scenario.prefix_sharing == self.sharing:
            return  # already built for this setting (Reset sets both at once)
        self.scenario = new_scenario(RadixScenario, self.sharing)
        for op in self.ops:
            # an op that fails under the other setting (nothing to release, say) is dropped
            with contextlib.suppress(ValueError, KeyError):
                self._apply(*op)
        if self.sharing:
            self._resolve_prediction()
        self._refresh(playing=False)

    def add_request(self, question: str | None = None, settle: bool = False,
                    after: tuple[int, ...] | None = None) -> bool:
        """Ask `question` (default: the prompt box) after the shared system prompt, and run it
        (see `_run_added`; `after` as for node 02's add_request)."""
        question = self.prompt if question is None else question
        added = self._add(question, lambda q: self._apply("ask", q, False), settle, after)
        if added is Added.REFUSED:
            return False
        ops = [*self.ops, ("ask", question)]
        self._refresh(prompt=self._next_question(ops), playing=added is Added.PLAYING)
        return True

    def fill_pool(self, max_requests: int = 16) -> int:
        """Ask the next questions one by one until the pool runs dry: the engine evicts an idle
        cached prefix, refuses or preempts a request. Returns how many were asked."""
        before = self.scenario.snapshot().metrics
        ops, n, why = list(self.ops), 0, f"stopped after {max_requests}: the pool still has room"
        while n < max_requests:
            question = self._next_question(ops)
            if not self._try(self.scenario.ask, question):
                why = "the engine turned one down"
                break
            ops.append(("ask", question))
            n += 1
            m = self.scenario.snapshot().metrics
            if m.evicted_blocks > before.evicted_blocks:
                why = (
                    f"the engine evicted {m.evicted_blocks - before.evicted_blocks} idle cached block(s) to "
                    "make room")
                break
            if (m.rejected, m.preempted) != (before.rejected, before.preempted):
                why = "the pool ran dry and a request was refused"
                break
        self._refresh(f"Asked {n} more question{'s' if n != 1 else ''}; {why}.",
                      prompt=self._next_question(ops), playing=False)
        return n

    def release_oldest(self, after: tuple[int, ...] | None = None) -> bool:
        """Release the oldest finished request: with sharing on, its blocks stay cached (idle).
        `after`: as for add_request."""
        if after is not None and not self._try(self.step_to, after):
            return False
        if not self._try(self._apply, "release", ""):
            return False
        self._refresh()
        return True

    def question(self) -> Question | None:
        if self.sharing:
            return None
        snap = self.snapshot or self.scenario.snapshot()
        live = sum(bool(r.block_table) for r in snap.requests)
        return Question(text.PREDICT.format(live=live, stored=snap.metrics.blocks_stored), "Prefix sharing")

    def outcome(self) -> str:
        return str(self.scenario.snapshot().metrics.blocks_stored)

    def explain(self) -> str:
        snap = self.scenario.snapshot()
        return text.WHY_STORED.format(sum=fmt.stored_sum(snap))

    def reset(self, sharing: bool = False) -> None:
        """Back to the defaults, the checkbox included: one update that every binding hears.
        (`sharing`: a link's setting, built at once: kvviz/nodes/radix/url.py `start`.)"""
        self.scenario = new_scenario(RadixScenario, sharing)
        self._refresh("Back to the lesson's starting point.", playing=False, sharing=sharing,
                      prompt=MORE_QUESTIONS[0], predicted=None,
                      verdict_shown=False)

