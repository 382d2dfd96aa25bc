"""What every live node's view shares: the section, prose, the engine badge, buttons, the
transport and the metric-card row. Each node's own view is in kvviz/nodes/<node>/view.py."""

from __future__ import annotations

import html

import panel as pn
import param

from kvviz import formatting as fmt
from kvviz.controls.prediction import Prediction
from kvviz.controls.step_links import step_links
from kvviz.controls.transport import Transport, notice_line
from kvviz.figures.metric_card import card_row
from kvviz.handin.session import HandInSession
from kvviz.handin.view import HandInView
from kvviz.state.node import NodeState
from kvviz.web.live_html import bound_html
from kvviz.web.refs import value


def badge(node: str, snapshot: param.Parameter) -> pn.pane.HTML:
    """Which engine backend and device are live, read from a snapshot parameter."""
    def html_for():
        return (f'<span class="kv-badge" data-node="{node}" title="The engine backend and device '
                f'running this node">engine: {html.escape(fmt.backend_badge(value(snapshot)))}</span>')
    return bound_html(html_for, snapshot, margin=(4, 10), align="end")


def section(key: str, *objects, outline=()) -> pn.Column:
    """A node's section, ending with its back and continue links (in the lesson's `outline`)."""
    return pn.Column(*objects, step_links(key, outline), sizing_mode="stretch_width",
                     css_classes=["kv-node", f"kv-node-{key}"], margin=(0, 0, 24, 0))


def prose(md: str, css_classes=()) -> pn.pane.Markdown:
    return pn.pane.Markdown(md, sizing_mode="stretch_width", css_classes=["kv-prose", *css_classes])


class NodeView(pn.viewable.Viewer):
    """A live node's view; `on_interact(key)` tells the page which node the user last touched."""

    state = param.ClassSelector(class_=NodeState)
    on_interact = param.Callable(default=None)
    outline = param.Parameter(default=(), doc="the lesson's nodes, (key, number, title) each (Node.outline)")
    handin = param.ClassSelector(class_=HandInSession, default=None,
                                 doc="the session's hand-in (Lesson.handin): offered under a resolved "
                                     "prediction")

    def __init__(self, **params):
        super().__init__(**params)
        self.state.batch_updates = pn.io.hold  # one action, one message to the browser

    def _touch(self, *_):
        if self.on_interact:
            self.on_interact(self.state.key)

    def _button(self, name: str, method, slow: bool = False, **kw) -> pn.widgets.Button:
        """A button calling `method`; a `slow` one (a second or more) shows a spinner meanwhile. Its
        class `kv-do-<method's name>` names it for the played page and the server (never its label)."""
        button = pn.widgets.Button(label=name,
                                   css_classes=[*kw.pop("css_classes", []), f"kv-do-{method.__name__}"], **kw)

        def click(_event):
            self._touch()
            if not slow:
                return method()
            with pn.param.set_values(button, loading=True):  # (sent before the work starts)
                return method()

        button.on_click(click)
        return button

    def _notice(self) -> pn.Column:
        """The state's notice about the node's own controls: put it right under them. Beside it,
        empty and hidden here, the line where a recorded page (kvviz/export/player_live.js) says that
        what the student just typed or pressed was run live by the server's engine."""
        live = pn.pane.HTML("", visible=False, sizing_mode="stretch_width", margin=(0, 10),
                            css_classes=["kv-live", f"kv-live-{self.state.key}"])
        return pn.Column(notice_line(self.state, "controls"), live, sizing_mode="stretch_width", margin=0)

    def _prediction(self) -> Prediction:
        """The predict-then-run panel; in a lesson, a compact hand-in under its verdict."""
        h, key = self.handin, self.state.key
        row = (lambda: HandInView(session=h, compact=True, where=key)) if h is not None else None
        self.prediction = Prediction(state=self.state, after_verdict=row)
        return self.prediction

    def _transport(self) -> Transport:
        self.transport = Transport(state=self.state, on_interact=self.on_interact)
        return self.transport

    def set_visible(self, visible: bool) -> None:
        """Whether the node is on screen: Play animates only while it is."""
        self.transport.player.set_visible(visible)

    def _cards(self, cards) -> pn.FlexBox:
        return card_row(self.state, cards)

    def __panel__(self):
        return self._layout
