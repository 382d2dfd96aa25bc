"""The transport under each live node (Rewind, Step back, Step, Play/Pause) and the play timer.

Play steps the engine on a periodic callback; the callback stops at idle, on Pause, and when
the browser session ends.
"""

from __future__ import annotations

import html

import panel as pn
import param

from kvviz.nodes.state_base import NodeState
from kvviz.web.a11y import AccessibleNames
from kvviz.web.live_html import LiveHTML

PLAY_PERIOD_MS = 250
SPEEDS = {"Speed: slow": 800, "Speed: normal": PLAY_PERIOD_MS, "Speed: fast": 100}  # ms per engine step


class Player:
    """Runs `state.tick` every `period_ms` while `state.playing` is True."""

    def __init__(self, state, period_ms: int = PLAY_PERIOD_MS):
        self.state, self.period_ms, self._callback = state, period_ms, None
        state.param.watch(self._on_playing, "playing")
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(lambda _ctx: self.stop())

    def set_period(self, period_ms: int) -> None:
        """A new pace, taking effect at once if playing."""
        self.period_ms = period_ms
        if self._callback is not None:
            self._callback.period = period_ms

    def _on_playing(self, event) -> None:
        if event.new and self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.state.tick, period=self.period_ms)
        elif not event.new:
            self.stop()

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None


def notice_html(text: str) -> str:
    if not text:
        return '<div class="kv-notice kv-empty" role="status"></div>'
    return f'<div class="kv-notice" role="status">{html.escape(text)}</div>'


class Transport(pn.viewable.Viewer):
    """Buttons that drive `state` step by step, the step count, and the state's notice line."""

    state = param.ClassSelector(class_=NodeState)
    on_interact = param.Callable(default=None, doc="called with the state's key on every click")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self.player = Player(s)

        def act(method):
            def click(_event):
                if self.on_interact:
                    self.on_interact(s.key)
                method()
            return click

        self.rewind = pn.widgets.Button(label="⟲ Rewind", description="Back to the start: requests queued, no KV")
        self.back = pn.widgets.Button(label="◀ Step back", description="Undo one engine step (shortcut ←)")
        self.fwd = pn.widgets.Button(label="Step ▶", description="Run one engine step (shortcut →)")
        self.play = pn.widgets.Button(
            label=pn.bind(lambda p: "❚❚ Pause" if p else "▶ Play", s.param.playing),
            color="primary", description="Step continuously (shortcut: space)",
        )
        for button, method in ((self.rewind, s.rewind), (self.back, s.step_back), (self.fwd, s.step),
                               (self.play, s.toggle_play)):
            button.on_click(act(method))
            button.css_classes = ["kv-transport-button"]
        self.speed = pn.widgets.Select(options=SPEEDS, value=PLAY_PERIOD_MS, width=150, margin=(5, 10),
                                       css_classes=["kv-speed"])
        self.speed.param.watch(lambda e: self.player.set_period(e.new), "value")
        self.counter = LiveHTML(pn.bind(self._counter, s.param.version, s.param.playing), margin=(8, 10))
        self.notice = LiveHTML(pn.bind(notice_html, s.param.notice), sizing_mode="stretch_width")
        self._layout = pn.Column(
            pn.FlexBox(self.rewind, self.back, self.fwd, self.play, self.speed, self.counter, flex_wrap="wrap",
                       align_items="center", sizing_mode="stretch_width"),
            self.notice, AccessibleNames(names={"kv-speed": "Play speed"}),
            sizing_mode="stretch_width", css_classes=["kv-transport"],
        )

    def _counter(self, _version, playing) -> str:
        s = self.state
        status = "playing" if playing else ("idle" if not s.has_work else "paused")
        return (f'<span class="kv-step" data-node="{s.key}">step <b>{s.step_count}</b> · '
                f'{status}</span>')

    def __panel__(self):
        return self._layout
