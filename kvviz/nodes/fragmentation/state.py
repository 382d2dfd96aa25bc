"""Node 01's state: the reserved length and Free R2 (param only, no Panel)."""

from __future__ import annotations

import param

from engine import Snapshot
from kvviz.nodes.fragmentation import text
from kvviz.nodes.fragmentation.scenario import LONG_REQUEST_BLOCKS, FragmentationScenario
from kvviz.nodes.scenario_base import new_scenario
from kvviz.state.node import NodeState
from kvviz.state.predict import Question


class FragmentationState(NodeState):
    """One contiguous 32-block pool; each request reserves `reserve` blocks up front."""

    key = "fragmentation"
    reserve = param.Integer(default=8, bounds=(1, 16), label="Reserved length", doc="blocks per slab")
    freed_r2 = param.Boolean(default=False, doc="Free R2 was pressed (and a long request tried)")
    free_r2_off = param.String(default="", doc="why Free R2 cannot be pressed now, or '' when it can")
    snapshot = param.ClassSelector(class_=Snapshot, doc="the pool now")

    def __init__(self, **params):
        super().__init__(**params)
        self.scenario = new_scenario(FragmentationScenario, self.reserve)
        self._refresh()

    def _snapshots(self) -> dict:
        freed = any(op.kind == "release" for op in self.scenario.timeline.ops)  # (Step back can undo it)
        why = self.scenario.r2_refused
        off = text.FREED if freed else text.NO_R2.format(why=why) if why else ""
        return {"snapshot": self.scenario.snapshot(), "freed_r2": freed, "free_r2_off": off}

    @param.depends("reserve", watch=True)
    def _rebuild(self) -> None:
        if self.scenario.reserve_blocks == self.reserve:
            return  # already built for this length (Reset sets both at once)
        freed = self.freed_r2
        self.scenario = new_scenario(FragmentationScenario, self.reserve)
        # (a prediction locked in was asked about the old length: _refresh drops it, and says so)
        if freed and (why := self._why_not(self.scenario.free_r2)) is not None:
            return self._refresh(f"With {self.reserve}-block slabs there is no R2 to free: {why}",
                                 playing=False)
        self._refresh(playing=False)

    def free_r2(self) -> None:
        """Release R2 once the three requests have finished (run them to the end first, so the
        picture is the lesson's whatever step the student was at), then try the long request."""
        if self.freed_r2:
            self._refresh("R2 is already freed. Press Reset to start again.", warn=True)
            return
        if self.free_r2_off:  # (no R2 at this length; the button is off and says why)
            self._refresh(self.free_r2_off, warn=True)
            return
        ran = self.scenario.timeline.has_work
        if ran:
            self._run_until_idle()
        if self._try(self.scenario.free_r2):
            self._resolve_prediction()
            self._refresh(text.RAN_FIRST if ran else "", playing=False)
        elif ran:
            self._refresh(self.notice, warn=True, playing=False)

    CHOICES = ("admitted", "refused")

    def question(self) -> Question | None:
        if self.freed_r2 or self.scenario.r2_refused:  # (done, or no R2 ran at this length)
            return None
        return Question(text.PREDICT.format(reserve=self.reserve), "Free R2", self.CHOICES)

    def outcome(self) -> str:
        newest = self.scenario.snapshot().requests[-1]
        return "refused" if newest.status == "refused" else "admitted"

    def explain(self) -> str:
        snap = self.scenario.snapshot()
        newest, m = snap.requests[-1], snap.metrics
        if newest.status == "refused":
            return text.WHY_REFUSED.format(free=m.blocks_free, run=m.largest_free_run,
                                           need=LONG_REQUEST_BLOCKS, name=newest.name)
        table = newest.block_table
        return text.WHY_ADMITTED.format(need=len(table), name=newest.name, first=min(table), last=max(table))

    def reset(self, reserve: int | None = None) -> None:
        """Back to the defaults, widgets included: one update that every binding hears.
        (`reserve`: a link's length, built at once: kvviz/nodes/fragmentation/url.py `start`.)"""
        default = self.param.reserve.default if reserve is None else reserve
        self.scenario = new_scenario(FragmentationScenario, default)
        self._refresh("Back to the lesson's starting point.", playing=False, reserve=default, predicted=None,
                      verdict_shown=False)
