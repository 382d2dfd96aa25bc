"""What every lesson node's state has: its scenario's timelines, the transport (step, step back,
rewind, play) and a notice line. The three nodes' states are in kvviz/state.py."""

from __future__ import annotations

import threading

import param
from panel.io import hold

from kvviz import format as fmt
from kvviz.scenarios import clone

_PROTOTYPES: dict[tuple, object] = {}
_PROTOTYPES_LOCK = threading.Lock()


def fresh(factory, *args):
    """A new scenario `factory(*args)`: built once per process, then cloned for each session
    (same engines, same tokens, same block ids; only the model weights are shared)."""
    key = (factory, args)
    with _PROTOTYPES_LOCK:
        if key not in _PROTOTYPES:
            _PROTOTYPES[key] = factory(*args)
        return clone(_PROTOTYPES[key])


class NodeState(param.Parameterized):
    """What every node has: its timelines, a play switch and a notice line."""

    playing = param.Boolean(default=False, doc="True while Play advances the engines")
    notice = param.String(default="", doc="A friendly message about the last action, or ''")
    version = param.Integer(default=0, doc="Bumped after every change of the engines")

    key = "node"

    @property
    def timelines(self):
        return self.scenario.timelines

    @property
    def has_work(self) -> bool:
        return any(t.has_work for t in self.timelines)

    @property
    def step_count(self) -> int:
        return max(t.num_steps for t in self.timelines)

    def _refresh(self, notice: str = "", snapshots: dict | None = None, **extra) -> None:
        """Publish the engines' current snapshots (`snapshots`, else `_snapshots()`): one batched
        param update, and (in a served session) one message to the browser with every pane and
        figure it changes. Without a session `hold` does nothing."""
        with hold():
            snapshots = self._snapshots() if snapshots is None else snapshots
            self.param.update({"notice": notice, "version": self.version + 1, **snapshots, **extra})

    def _snapshots(self) -> dict:
        raise NotImplementedError

    def _try(self, action, *args) -> bool:
        """Run an engine action; a ValueError or KeyError becomes the notice and changes nothing."""
        try:
            action(*args)
        except (ValueError, KeyError) as e:
            why = e.args[0] if e.args else type(e).__name__
            self.param.update(notice=f"That did not work: {why}.")
            return False
        return True

    # -- the transport: watching the engine step by step ------------------------------------
    def step(self) -> bool:
        """One engine step on every timeline with work; False at idle (says so)."""
        stepped = [t.step() for t in self.timelines]
        if not any(stepped):
            self._refresh("Nothing left to run: every request has finished or was refused.", playing=False)
            return False
        self._refresh()
        return True

    def step_back(self) -> bool:
        """Back to the state before the last step (replayed deterministically from the start)."""
        n = self.step_count
        if n == 0:
            self._refresh("Already at the start: no step to undo.")
            return False
        for t in self.timelines:
            if t.num_steps == n:
                t.step_back()
        self._refresh(playing=False)
        return True

    def rewind(self) -> None:
        """Back to before the first step: the requests queued, no token computed yet."""
        for t in self.timelines:
            t.rewind()
        self._refresh("Rewound: the requests are queued and no KV is computed yet. Press Step or Play.",
                      playing=False)

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

    def _add(self, text: str, add, settle: bool, after: tuple[int, ...] | None) -> bool | None:
        """Validate `text`, step to `after` if given (a link's replay), then `add(text)` and run
        it (`_run_added`; not at all after `after`: the link settles at the end). Returns the
        `playing` to publish, or None when it did not work (the notice says why)."""
        if why := fmt.check_prompt(text):
            self.param.update(notice=why)
            return None
        if after is not None and not self._try(self.step_to, after):
            return None
        if not self._try(add, text):
            return None
        return False if after is not None else self._run_added(settle)

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
