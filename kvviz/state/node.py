"""What every live node's state has: its scenario's timelines, the transport (step, step back,
rewind, play) and a notice line. Each node's own state is in kvviz/nodes/<node>/state.py.

Widget action -> a method here -> engine calls through a Timeline -> snapshot parameters ->
views (docs/architecture.md, "Data flow"). Every action either succeeds or leaves the engines
unchanged and says why in `notice` (a friendly sentence, never a traceback). No Panel here: a
view hands the state `batch_updates` (Panel's `hold`) so one action reaches the browser as one
message.
"""

from __future__ import annotations

import contextlib
import enum

import param

from kvviz import formatting as fmt
from kvviz.state import predict

# What the transport says beside its buttons, by what happened (as data: a played page says the same,
# kvviz/export/player.js `say`, reading them from the page's metadata).
SAYS = {
    "idle": "Nothing left to run: every request has finished or was refused.",
    "start": "Already at the start: no step to undo.",
    "rewound": "Rewound: the requests are queued and no KV is computed yet. Press Step or Play.",
}


class Added(enum.Enum):
    """What became of a request the student added."""

    REFUSED = "refused"  # not added: the notice says why
    SETTLED = "settled"  # added and run to the end (or replayed from a link): nothing to play
    PLAYING = "playing"  # added; its first step taken, Play runs the rest


class NodeState(param.Parameterized):
    """What every node has: its timelines, a play switch and a notice line."""

    playing = param.Boolean(default=False, doc="True while Play advances the engines")
    notice = param.String(default="", doc="A friendly message about the last action, or ''")
    notice_level = param.Selector(default="info", objects=["info", "warning"],
                                  doc="warning: the action was refused or the input was bad")
    notice_at = param.Selector(default="controls", objects=["controls", "transport"],
                               doc="shown next to the node's own controls, or next to the transport")
    show_reads = param.Boolean(default=False, doc="the last action stepped the engine: show what it read")
    version = param.Integer(default=0, doc="Bumped after every change of the engines")
    predicted = param.ClassSelector(class_=predict.PendingPrediction, default=None, allow_None=True,
                                    doc="the student's pending prediction (predict.PendingPrediction), or "
                                        "None")
    predictions = param.List(default=[],
                             doc="resolved predictions (predict.ResolvedPrediction), oldest first")
    prediction_note = param.String(default="", doc="why a typed prediction was not taken, or ''")
    verdict_shown = param.Boolean(default=False,
                                  doc="the newest resolved prediction is on show (Reset hides it)")

    batch_updates = param.Callable(default=contextlib.nullcontext, precedence=-1,
                                   doc="a context manager sending the updates inside it as one message")

    key = "node"
    CHOICES: tuple[str, ...] | None = None  # the answers of the node's question, even while none is asked

    @property
    def timelines(self):
        return self.scenario.timelines

    @property
    def has_work(self) -> bool:
        return any(t.has_work for t in self.timelines)

    @property
    def step_count(self) -> int:
        return max(t.num_steps for t in self.timelines)

    def _refresh(self, notice: str = "", snapshots: dict | None = None, *, warn: bool = False,
                 at: str = "controls", reads: bool = False, **extra) -> None:
        """Publish the engines' current snapshots (`snapshots`, else `_snapshots()`): one batched
        param update, and (in a served session) one message to the browser with every pane and
        figure it changes. Outside a served session this batches nothing. `warn`: the notice is
        a refusal; `at`: where it shows; `reads`: an engine step, whose reads the strips light."""
        with self.batch_updates():
            self._before_refresh()
            snapshots = self._snapshots() if snapshots is None else snapshots
            if extra.get("predicted", True) is None:  # (a prediction dropped on purpose: Reset)
                extra.setdefault("prediction_note", "")
            self.param.update({"notice": notice, "notice_level": "warning" if warn else "info",
                               "notice_at": at, "show_reads": reads, "version": self.version + 1, **snapshots,
                               **extra})
            if "predicted" not in extra:
                self._drop_stale_prediction()

    def _say(self, notice: str, warn: bool = True, at: str = "controls") -> None:
        """A notice alone (nothing else changed)."""
        self.param.update(notice=notice, notice_level="warning" if warn else "info", notice_at=at)

    def _before_refresh(self) -> None:
        """What a node keeps in step with its engines before each refresh (none by default)."""

    def _snapshots(self) -> dict:
        """The engines' current snapshots, as the params they set: a read, changing nothing."""
        raise NotImplementedError

    @staticmethod
    def _why_not(action, *args) -> str | None:
        """Run an engine action: None when it worked, else the engine's reason (a ValueError or
        KeyError, which changes nothing)."""
        try:
            action(*args)
        except (ValueError, KeyError) as e:
            return e.args[0] if e.args else type(e).__name__
        return None

    def _try(self, action, *args) -> bool:
        """Run an engine action; a refusal becomes the notice and changes nothing."""
        if (why := self._why_not(action, *args)) is None:
            return True
        self._say(f"That did not work: {why}.")
        return False

    # -- predict, then run (kvviz/state/predict.py) ----------------------------------------
    def question(self) -> predict.Question | None:
        """The prediction asked before the node's key action, or None while there is none."""
        return None

    def outcome(self) -> str:
        """What the key action just did, in the terms of `question()`'s answer."""
        raise NotImplementedError

    def explain(self) -> str:
        """Why the engine did `outcome()`: its own numbers for the state now (one sentence)."""
        return ""

    def predict(self, typed: str) -> bool:
        """Commit to a prediction for the next key action (bad input: a note, nothing kept)."""
        question = self.question()
        if question is None:
            self.prediction_note = "There is nothing to predict right now: press Reset to try again."
            return False
        taken, why = predict.read(question, typed)
        if taken is None:
            self.prediction_note = why
            return False
        self.param.update(predicted=predict.PendingPrediction(question.text, taken), prediction_note="")
        return True

    def _awaits_outcome(self) -> bool:
        """Whether the key action ran and its outcome is not known yet (the pending prediction stays)."""
        return False

    def _drop_stale_prediction(self) -> None:
        """A prediction locked in for a question no longer asked (a slider rewrote it, a step
        changed its numbers) is dropped, and the note says so: it would be judged against another
        question."""
        if self.predicted is None or self._awaits_outcome():
            return
        question = self.question()
        if question is None or question.text != self.predicted.question:
            self.param.update(predicted=None,
                              prediction_note=predict.CLEARED.format(predicted=self.predicted.predicted))

    def _resolve_prediction(self) -> None:
        """After the key action ran: the pending prediction meets the engine's outcome."""
        if self.predicted is not None:
            entry = predict.record(self.key, self.predicted, self.outcome(), self.explain())
            self.param.update(predictions=[*self.predictions, entry], predicted=None, verdict_shown=True)

    # -- the transport: watching the engine step by step ------------------------------------
    def step(self) -> bool:
        """One engine step on every timeline with work; False at idle (says so)."""
        stepped = [t.step() for t in self.timelines]
        if not any(stepped):
            self._refresh(SAYS["idle"], playing=False, at="transport")
            return False
        self._refresh(at="transport", reads=True)
        return True

    def step_back(self) -> bool:
        """Back to the state before the last step (replayed deterministically from the start)."""
        if self.step_count == 0:
            self._refresh(SAYS["start"], at="transport")
            return False
        # The pools step together, each while it has work: the last step was taken by the pools
        # with the most steps since the last add or release. Right after an add, the step before
        # it is undone where it was the last, and the add on every pool (they keep one history).
        trailing = [t.trailing_steps for t in self.timelines]
        if max(trailing) > 0:
            for t, n in zip(self.timelines, trailing, strict=True):
                if n == max(trailing):
                    t.step_back()
        else:
            before = [t.steps_before()[-1] if t.steps_before() else 0 for t in self.timelines]
            for t, n in zip(self.timelines, before, strict=True):
                if n == max(before):
                    t.step_back()
                else:  # (its part of that stretch ended earlier: drop only what came after it)
                    t.replay(t.ops[:max((i + 1 for i, op in enumerate(t.ops) if op.kind == "step"),
                                        default=0)])
        self._refresh(playing=False, at="transport", reads=True)
        return True

    def rewind(self) -> None:
        """Back to before the first step: the requests queued, no token computed yet."""
        for t in self.timelines:
            t.rewind()
        self._refresh(SAYS["rewound"], playing=False, at="transport")

    def toggle_play(self) -> None:
        if self.playing:
            self.playing = False
            return
        if not self.has_work:
            self.rewind()
        self.playing = True

    def step_to(self, gaps: tuple[int, ...]) -> None:
        """Step each timeline to its `gaps` steps since its last add or release (see
        Timeline.step_to): how a link replays a request added while another was running."""
        if len(gaps) != len(self.timelines):
            raise ValueError(f"{len(gaps)} step counts for {len(self.timelines)} pools")
        for t, gap in zip(self.timelines, gaps, strict=True):
            t.step_to(gap)

    def _run_until_idle(self) -> None:
        for t in self.timelines:
            t.run_until_idle()

    def settle(self) -> None:
        """Run every timeline until idle (a restored link ends settled)."""
        self._run_until_idle()
        self._refresh(playing=False)

    def _gaps(self, skip: int) -> list[str]:
        """Per add or release since the defaults: each timeline's steps before it, as 'a.b'."""
        per_timeline = [t.steps_before(skip) for t in self.timelines]
        return [".".join(map(str, g)) for g in zip(*per_timeline, strict=True)]

    def _add(self, text: str, add, settle: bool, after: tuple[int, ...] | None) -> Added:
        """Validate `text`, step to `after` if given (a link's replay), then `add(text)` and run
        it (`_run_added`; not at all after `after`: the link settles at the end)."""
        if why := fmt.check_prompt(text):
            self._say(why)
            return Added.REFUSED
        if after is not None and not self._try(self.step_to, after):
            return Added.REFUSED
        if not self._try(add, text):
            return Added.REFUSED
        if after is not None:
            return Added.SETTLED
        return Added.PLAYING if self._run_added(settle) else Added.SETTLED

    def _run_added(self, settle: bool) -> bool:
        """After a request was added: settle (run until idle: for links and tests), or take its
        first step now, so that its prompt's blocks show at once, and let Play run it token by
        token until idle (while already playing, the play loop takes it along: continuous
        batching). Returns the `playing` to publish."""
        if settle:
            self._run_until_idle()
            return False
        if not self.playing:
            for t in self.timelines:
                t.step()
        return self.has_work

    def tick(self) -> None:
        """Called by the play timer: one step, stopping at idle."""
        if self.playing and not self.step():
            self.playing = False

    def reset(self) -> None:
        raise NotImplementedError
