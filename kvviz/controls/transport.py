"""The transport under each live node (Rewind, Step back, Step, Play/Pause) and the play timer.

Play steps the engine on a periodic callback; the callback stops at idle, on Pause, when the
browser session ends, and while the node is off screen (it resumes when the node is back in
view: `Player.set_visible`). Each tick reaches the browser as one message: the step and every
figure it redraws (kvviz/web/redraw.py, `flush`).

The normal pace is the class's: `KVVIZ_PLAY_MS` (milliseconds per engine step, 50 to 2000;
default 250), so a teacher can slow a whole room down; each student's Speed menu still offers
slow, normal and fast.
"""

from __future__ import annotations

import functools
import html
import os

import panel as pn
import param
from bokeh.document import Document

from kvviz.state.node import SAYS, NodeState
from kvviz.web import redraw
from kvviz.web.a11y import AccessibleNames
from kvviz.web.live_html import LiveHTML, bound_html


def class_pace(environ=os.environ) -> int:
    """The normal milliseconds per Play step: KVVIZ_PLAY_MS if it is a whole number from 50 to
    2000, else 250 (a bad value is ignored: the lesson must start)."""
    text = environ.get("KVVIZ_PLAY_MS", "")
    if text.isascii() and text.isdigit() and len(text) <= 4 and 50 <= int(text) <= 2000:
        return int(text)
    return 250


PLAY_PERIOD_MS = class_pace()
# ms per engine step: 800, 250 and 100 at the default pace
SPEEDS = {"Speed: slow": round(3.2 * PLAY_PERIOD_MS), "Speed: normal": PLAY_PERIOD_MS,
          "Speed: fast": round(0.4 * PLAY_PERIOD_MS)}


class Player:
    """Runs `state.tick` every `period_ms` while `state.playing` is True and the node is visible."""

    def __init__(self, state, period_ms: int = PLAY_PERIOD_MS):
        self.state, self.period_ms, self._callback = state, period_ms, None
        self.visible = True
        state.param.watch(lambda _e: self._update(), "playing")
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            pn.state.on_session_destroyed(lambda _ctx: self.stop())

    def set_period(self, period_ms: int) -> None:
        """A new pace, taking effect at once if playing."""
        self.period_ms = period_ms
        if self._callback is not None:
            self._callback.period = period_ms

    def set_visible(self, visible: bool) -> None:
        """Tick only while the node is on screen: nobody watches an animation scrolled away."""
        self.visible = visible
        self._update()

    def _update(self) -> None:
        if self.state.playing and self.visible and self._callback is None:
            self._callback = pn.state.add_periodic_callback(self._tick, period=self.period_ms)
        elif not (self.state.playing and self.visible):
            self.stop()

    def _tick(self) -> None:
        with pn.io.hold():
            self.state.tick()
            redraw.flush()

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None


def notice_html(text: str, level: str = "warning") -> str:
    """A notice line; '' when there is none (so a page holds one `.kv-notice` per node at most)."""
    if not text:
        return ""
    return f'<div class="kv-notice kv-{html.escape(level)}" role="status">{html.escape(text)}</div>'


@functools.cache  # (the same for every node of every page)
def said_texts() -> dict[str, str]:
    """Each of SAYS' sentences as the transport's notice line holds it (its model's text, as
    Panel writes it): what a played page sets there (kvviz/export/player.js `say`)."""
    return {k: LiveHTML(notice_html(text, "info")).get_root(Document()).text for k, text in SAYS.items()}


def notice_line(state: NodeState, at: str) -> LiveHTML:
    """The state's notice, shown here when the action it is about was done `at` here: next to
    the node's own controls ("controls") or next to the transport ("transport", with the class
    `kv-said-<node>`: where a played page says SAYS' sentences)."""
    def html_for():
        return notice_html(state.notice if state.notice_at == at else "", state.notice_level)
    return bound_html(html_for, state.param.notice, state.param.notice_level, state.param.notice_at,
                      sizing_mode="stretch_width", margin=(0, 10),
                      css_classes=[f"kv-said-{state.key}"] if at == "transport" else [])


SHORTCUTS = ('<details class="kv-more kv-shortcuts"><summary>Keys</summary><kbd>space</kbd> play or pause · '
             '<kbd>→</kbd> one step · <kbd>←</kbd> step back · <kbd>r</kbd> reset (not while '
             'typing)</details>')


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

        # (no tooltips: they covered the neighbouring buttons; the shortcuts are written below)
        self.rewind = pn.widgets.Button(label="⟲ Rewind")
        self.back = pn.widgets.Button(label="◀ Step back")
        self.fwd = pn.widgets.Button(label="Step ▶")
        self.play = pn.widgets.Button(label=pn.bind(lambda p: "❚❚ Pause" if p else "▶ Play", s.param.playing),
                                      color="primary")
        for button, method in ((self.rewind, s.rewind), (self.back, s.step_back), (self.fwd, s.step),
                               (self.play, s.toggle_play)):
            button.on_click(act(method))
            # (its id: kvviz/nodes/recipe.py)
            button.css_classes = ["kv-transport-button", f"kv-do-{method.__name__}"]
        self.speed = pn.widgets.Select(options=SPEEDS, value=PLAY_PERIOD_MS, width=190, margin=(5, 10),
                                       css_classes=["kv-speed"])
        self.speed.param.watch(lambda e: self.player.set_period(e.new), "value")
        # (a played page says "playing" in it)
        self.counter = bound_html(lambda: self._counter(s.version, s.playing), s.param.version,
                                  s.param.playing, margin=(8, 10), css_classes=["kv-counter"])
        self.notice = notice_line(s, "transport")
        self._layout = pn.Column(
            pn.FlexBox(self.rewind, self.back, self.fwd, self.play, self.speed, self.counter,
                       pn.pane.HTML(SHORTCUTS, margin=(0, 10)), flex_wrap="wrap",
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
