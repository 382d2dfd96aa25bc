"""The lesson's state: one `param.Parameterized` per node, wrapping the scenarios; no browser needed.

Widget action -> a method here -> engine calls through a Timeline -> `snapshot` params -> views.
Every action either succeeds or leaves the engines unchanged and says why in `notice` (a
friendly sentence, never a traceback). Actions that change the set-up (slider, Free R2,
Prefix sharing) settle the engines (run until idle) so the metric cards show the lesson's
figures; Add request takes the new request's first step and then plays until idle, so the
class sees its blocks fill token by token. Step / Play / Step back / Rewind let a class watch
any run step by step.
"""

from __future__ import annotations

import contextlib

import param

from engine import Snapshot
from kvviz.node_state import NodeState, fresh
from kvviz.scenarios import (
    RADIX_MORE_QUESTIONS,
    RADIX_QUESTIONS,
    Fragmentation,
    Paging,
    Radix,
)


class FragmentationState(NodeState):
    """Node 01: one contiguous 32-block pool; each request reserves `reserve` blocks up front."""

    key = "fragmentation"
    reserve = param.Integer(default=8, bounds=(1, 16), label="Reserved length", doc="blocks per slab")
    freed_r2 = param.Boolean(default=False, doc="Free R2 was pressed (and a long request tried)")
    snapshot = param.ClassSelector(class_=Snapshot, doc="the pool now")

    def __init__(self, **params):
        super().__init__(**params)
        self.scenario = fresh(Fragmentation, self.reserve)
        self._refresh()

    def _snapshots(self) -> dict:
        freed = any(op.kind == "release" for op in self.scenario.timeline.ops)  # (Step back can undo it)
        return {"snapshot": self.scenario.snapshot(), "freed_r2": freed}

    @param.depends("reserve", watch=True)
    def _rebuild(self) -> None:
        if self.scenario.reserve_blocks == self.reserve:
            return  # already built for this length (Reset sets both at once)
        freed = self.freed_r2
        self.scenario = fresh(Fragmentation, self.reserve)
        if freed and not self._try(self.scenario.free_r2):
            why = self.notice.removeprefix("That did not work: ")
            return self._refresh(f"With {self.reserve}-block slabs there is no R2 to free: {why}", playing=False)
        self._refresh(playing=False)

    def free_r2(self) -> None:
        if self.freed_r2:
            self._refresh("R2 is already freed. Press Reset to start again.")
            return
        if self._try(self.scenario.free_r2):
            self._refresh(playing=False)

    def reset(self) -> None:
        """Back to the defaults, widgets included: one update that every binding hears."""
        default = self.param.reserve.default
        self.scenario = fresh(Fragmentation, default)
        self._refresh("Back to the lesson's starting point.", playing=False, reserve=default)


class PagingState(NodeState):
    """Node 02: the same requests into a contiguous pool (6-block slabs) and a paged pool.

    Add request takes the new request's first step at once (its prompt's KV fills its first
    blocks: a slab in one pool, just the pages it needs in the other) and then plays until
    idle, so the class watches the paged pool grow page by page while the slab sits reserved.
    """

    key = "paging"
    prompt = param.String(default="", label="Prompt", doc="the next request's prompt (plain text)")
    added = param.List(default=[], item_type=str, doc="prompts added since the defaults, in order")
    added_gaps = param.List(default=[], item_type=str,
                            doc="per added prompt, the steps each pool took before it ('contiguous.paged')")
    request = param.Selector(default=None, objects=[], label="Request", allow_None=True,
                             doc="the request whose block table is drawn")
    contiguous = param.ClassSelector(class_=Snapshot, doc="the contiguous pool now")
    paged = param.ClassSelector(class_=Snapshot, doc="the paged pool now")

    def __init__(self, **params):
        super().__init__(**params)
        self.scenario = fresh(Paging)
        self.prompt = self.scenario.next_request()[0]
        self._refresh()

    def _snapshots(self, show_newest: bool = False) -> dict:
        paged = self.scenario.paged.snapshot()
        names = [r.name for r in paged.requests]
        self.param.request.objects = names
        if show_newest and names:
            chosen = names[-1]
        else:
            chosen = self.request if self.request in names else (names[0] if names else None)
        # What was added since the defaults, read from the ops (Step back or Rewind can drop some).
        added = [op.prompt for op in self.scenario.paged.ops if op.kind == "add"][Paging.NUM_INITIAL:]
        return {"contiguous": self.scenario.contiguous.snapshot(), "paged": paged, "request": chosen,
                "added": added, "added_gaps": self._gaps(Paging.NUM_INITIAL)}

    def add_request(self, prompt: str | None = None, settle: bool = False,
                    after: tuple[int, ...] | None = None) -> bool:
        """Add a request for `prompt` (default: the prompt box) to both pools and run it (see
        `_run_added`); its block table is the one drawn. With `after` (a link's replay), first
        step each pool to that many steps since the last add, then add without running."""
        prompt = self.prompt if prompt is None else prompt
        playing = self._add(prompt, lambda p: self.scenario.add_prompt(p, False), settle, after)
        if playing is None:
            return False
        self._refresh(snapshots=self._snapshots(show_newest=True), prompt=self.scenario.next_request()[0],
                      playing=playing)
        return True

    def reset(self) -> None:
        self.scenario = fresh(Paging)
        self._refresh("Back to the lesson's starting point.", playing=False,
                      prompt=self.scenario.next_request()[0], request=None)


class RadixState(NodeState):
    """Node 03: one paged 48-block pool; requests share a system prompt when sharing is on."""

    key = "radix"
    sharing = param.Boolean(default=False, label="Prefix sharing", doc="share cached prefix blocks")
    prompt = param.String(default=RADIX_MORE_QUESTIONS[0], label="Your question",
                          doc="appended to the shared system prompt")
    ops = param.List(default=[], doc="('ask', question) and ('release', '') since the defaults")
    op_gaps = param.List(default=[], item_type=str, doc="per op, the engine steps taken before it")
    snapshot = param.ClassSelector(class_=Snapshot, doc="the pool now")

    def __init__(self, **params):
        super().__init__(**params)
        self.scenario = fresh(Radix, self.sharing)
        self._refresh()

    def _snapshots(self) -> dict:
        return {"snapshot": self.scenario.snapshot(), "ops": self._ops_since_defaults(),
                "op_gaps": self._gaps(len(RADIX_QUESTIONS))}

    def _ops_since_defaults(self) -> list[tuple[str, str]]:
        """The student's asks and releases, read from the timeline (Step back can drop some)."""
        ops = [("ask", Radix.question_of(op.prompt)) if op.kind == "add" else ("release", "")
               for op in self.scenario.timeline.ops if op.kind in ("add", "release")]
        return ops[len(RADIX_QUESTIONS):]

    @staticmethod
    def _next_question(ops) -> str:
        asked = sum(kind == "ask" for kind, _ in ops)
        return RADIX_MORE_QUESTIONS[asked % len(RADIX_MORE_QUESTIONS)]

    def _apply(self, kind: str, text: str, run: bool = True) -> None:
        if kind == "ask":
            self.scenario.ask(text, run=run)
        else:
            self._release_oldest()

    def _release_oldest(self) -> None:
        done = [r for r in self.scenario.snapshot().requests if r.status == "finished"]
        if not done:
            raise ValueError("no request has finished yet, so there is nothing to release")
        self.scenario.timeline.release(done[0].request_id)

    @param.depends("sharing", watch=True)
    def _rebuild(self) -> None:
        if self.scenario.prefix_sharing == self.sharing:
            return  # already built for this setting (Reset sets both at once)
        self.scenario = fresh(Radix, self.sharing)
        for op in self.ops:
            # an op that fails under the other setting (nothing to release, say) is dropped
            with contextlib.suppress(ValueError, KeyError):
                self._apply(*op)
        self._refresh(playing=False)

    def add_request(self, question: str | None = None, settle: bool = False,
                    after: tuple[int, ...] | None = None) -> bool:
        """Ask `question` (default: the prompt box) after the shared system prompt, and run it
        (see `_run_added`; `after` as for node 02's add_request)."""
        question = self.prompt if question is None else question
        playing = self._add(question, lambda q: self._apply("ask", q, False), settle, after)
        if playing is None:
            return False
        ops = [*self.ops, ("ask", question)]
        self._refresh(prompt=self._next_question(ops), playing=playing)
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
                why = f"the engine evicted {m.evicted_blocks - before.evicted_blocks} idle cached block(s) to make room"
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

    def reset(self) -> None:
        """Back to the defaults, the checkbox included: one update that every binding hears."""
        self.scenario = fresh(Radix, False)
        self._refresh("Back to the lesson's starting point.", playing=False, sharing=False,
                      prompt=RADIX_MORE_QUESTIONS[0])

