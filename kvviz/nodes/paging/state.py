"""Node 02's state: Add request into both pools, and the request whose block table is drawn."""

from __future__ import annotations

import param

from engine import Snapshot
from kvviz.nodes.paging import text
from kvviz.nodes.paging.scenario import PagingScenario
from kvviz.nodes.scenario_base import new_scenario
from kvviz.state.node import Added, NodeState
from kvviz.state.predict import Question


class PagingState(NodeState):
    """The same requests into a contiguous pool (6-block slabs) and a paged pool.

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
        self._awaited: str | None = None  # the request whose admission a prediction waits for
        self.scenario = new_scenario(PagingScenario)
        # (the suggestion the box holds, untouched; None once the student wrote in it)
        self._suggested: str | None = None
        self.prompt = self._suggest()
        self._refresh()

    def _before_refresh(self) -> None:
        """The block table's choices are the paged pool's requests; a prediction awaiting its
        outcome is resolved once there is one (admitted or refused: a request added while playing
        waits a step). (The choices are set only when they change: each setting is a message to the
        select's view, options and all, several milliseconds on every engine step.)"""
        names = [r.name for r in self.scenario.paged.snapshot().requests]
        if list(self.param.request.objects) != names:
            # (the request drawn chosen first, among the choices it had: the select's widget would
            # otherwise take the first of the new choices for one that is gone)
            if (chosen := self._chosen(names)) != self.request and chosen in self.param.request.objects:
                self.request = chosen
            self.param.request.objects = names
        if self._awaited is not None and self.outcome() != "waiting":
            self._resolve_prediction()
            self._awaited = None
        # The box suggests what Add request adds next from the state shown (a step back past an
        # add suggests that add's prompt again), unless the student wrote their own.
        if self._suggested is not None and self.prompt == self._suggested:
            self._suggested = self.prompt = self.scenario.next_request()[0]

    def typing(self, text: str) -> None:
        """The box's text as the student types it (before it is committed): from the first key that
        makes it differ from the suggestion, the box is theirs, and no step writes over it."""
        if text != self._suggested:
            self._suggested = None

    def _suggest(self) -> str:
        """The box refilled (Add request, Reset): the stream's next prompt, a suggestion again."""
        self._suggested = self.scenario.next_request()[0]
        return self._suggested

    def _snapshots(self, show_newest: bool = False) -> dict:
        paged = self.scenario.paged.snapshot()
        names = [r.name for r in paged.requests]
        chosen = names[-1] if show_newest and names else self._chosen(names)
        return {"contiguous": self.scenario.contiguous.snapshot(), "paged": paged, "request": chosen,
                "added": self.scenario.added(), "added_gaps": self._gaps(PagingScenario.NUM_INITIAL)}

    def _chosen(self, names: list[str]) -> str | None:
        """The request whose table is drawn among the requests `names`: the one chosen while it is
        there; stepped back past its arrival, the newest request added since the start; none chosen,
        or none added yet, the first (as on a new page)."""
        if not names or self.request in names:
            return self.request if names else None
        if self.request is not None and len(names) > PagingScenario.NUM_INITIAL:
            return names[-1]
        return names[0]

    def add_request(self, prompt: str | None = None, settle: bool = False,
                    after: tuple[int, ...] | None = None) -> bool:
        """Add a request for `prompt` (default: the prompt box) to both pools and run it (see
        `_run_added`); its block table is the one drawn. With `after` (a link's replay), first
        step each pool to that many steps since the last add, then add without running."""
        prompt = self.prompt if prompt is None else prompt
        added = self._add(prompt, lambda p: self.scenario.add_prompt(p, False), settle, after)
        if added is Added.REFUSED:
            return False
        if self.predicted is not None:
            self._awaited = self.scenario.contiguous.snapshot().requests[-1].name
        self._refresh(snapshots=self._snapshots(show_newest=True), prompt=self._suggest(),
                      playing=added is Added.PLAYING)
        return True

    CHOICES = ("admitted", "refused")

    def _awaits_outcome(self) -> bool:
        return self._awaited is not None

    def question(self) -> Question:
        free = self.scenario.contiguous.snapshot().metrics.blocks_free
        return Question(text.PREDICT.format(free=free), "Add request", self.CHOICES)

    def outcome(self) -> str:
        """What the contiguous pool did with the newest request: admitted, refused or still waiting."""
        newest = self.scenario.contiguous.snapshot().requests[-1]
        return {"refused": "refused", "waiting": "waiting"}.get(newest.status, "admitted")

    def explain(self) -> str:
        newest = self.scenario.contiguous.snapshot().requests[-1]
        if newest.status == "refused":
            paged = self.scenario.paged.snapshot().request(newest.name).status != "refused"
            return (text.WHY_REFUSED.format(reason=newest.reason)
                    + (text.PAGED_TOO if paged else ""))
        table, m = newest.block_table, self.scenario.contiguous.snapshot().metrics
        return text.WHY_ADMITTED.format(slab=len(table), first=min(table), last=max(table),
                                        free=m.blocks_free)

    def reset(self) -> None:
        self.scenario = new_scenario(PagingScenario)
        self._awaited = None
        self.request = None  # (the first request's block table is drawn again, as on a new page)
        self._refresh("Back to the lesson's starting point.", playing=False,
                      prompt=self._suggest(), predicted=None,
                      verdict_shown=False)
