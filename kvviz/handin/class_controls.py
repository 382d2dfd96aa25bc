"""The teacher runs the class (a part of the teacher page, built only once it is unlocked): the
live roster, Pause, how far students may go, "follow me", and the projector's anonymous names.

Its commands are the class endpoint's (class_state.command), given here by the unlocked
session itself (no passphrase travels again); every backend's students poll the state they set
(kvviz/handin/class_endpoint.py). `refresh` (called by the teacher page every second) reads the
roster and the class state (another teacher tab may have changed it) and redraws what changed.
"""

from __future__ import annotations

import logging
import time

import panel as pn
import param

from kvviz.handin import class_state, roster
from kvviz.handin.classroom import ClassState
from kvviz.handin.roster_html import roster_html
from kvviz.handin.storage import Store, StoreError
from kvviz.handin.view import status_html
from kvviz.web.live_html import LiveHTML

log = logging.getLogger("kvviz.handin")
PAUSE = {False: "Pause the class", True: "Resume the class"}
ALL = "Any node (no limit)"
ANON = {False: "Anonymise names (for the projector)", True: "Show the names"}


class ClassControls(pn.viewable.Viewer):
    store = param.ClassSelector(class_=Store, doc="the class database")
    outline = param.Parameter(default=(),
                              doc="every node's (key, number, title), in page order (the registry's)")
    anonymous = param.Boolean(default=False,
                              doc="the roster names each student 'Student N' (for the projector)")

    def __init__(self, **params):
        super().__init__(**params)
        self.state = ClassState()
        nodes = {f"{num} · {title}": key for key, num, title in self.outline}
        self.pause = pn.widgets.Button(label=PAUSE[False], color="warning",
                                       css_classes=["kv-c-pause", "kv-t-big"], sizing_mode="stretch_width",
                                       max_width=360)
        self.pace = pn.widgets.Select(label="Students may go up to", options={ALL: "", **nodes}, value="",
                                      css_classes=["kv-c-pace", "kv-t-big"], sizing_mode="stretch_width",
                                      max_width=360)
        self.follow_node = pn.widgets.Select(label="Bring everyone to", options=nodes,
                                             css_classes=["kv-c-node", "kv-t-big"],
                                             sizing_mode="stretch_width", max_width=360)
        self.follow_link = pn.widgets.TextInput(label="At the state of this link (optional)",
                                                placeholder="paste the lesson's address, e.g. "
                                                            "…/lesson/?sharing=0",
                                                css_classes=["kv-c-link", "kv-t-big"],
                                                sizing_mode="stretch_width", max_width=480)
        self.follow = pn.widgets.Button(label="Follow me: bring everyone there", color="primary",
                                        css_classes=["kv-c-follow", "kv-t-big"], sizing_mode="stretch_width",
                                        max_width=360)
        self.anon = pn.widgets.Button(label=ANON[False], css_classes=["kv-c-anon", "kv-t-big"])
        self.said = LiveHTML(status_html(), sizing_mode="stretch_width")
        self.roster = LiveHTML("", sizing_mode="stretch_width")
        self.pause.on_click(lambda _e: self.give("resume" if self.state.paused else "pause"))
        self.pace.param.watch(lambda e: None if e.new == self.state.pace
                              else self.give("pace", node=e.new), "value")
        self.follow.on_click(lambda _e: self.give("follow", node=self.follow_node.value or "",
                                                  query=self.follow_link.value_input or self.follow_link.value
                                                  or ""))
        self.anon.on_click(lambda _e: setattr(self, "anonymous", not self.anonymous))
        self.param.watch(lambda _e: self._anonymised(), "anonymous")
        self._roster_html = ""
        box = {"sizing_mode": "stretch_width", "flex_wrap": "wrap", "align_items": "flex-end"}
        self._layout = pn.Column(
            pn.FlexBox(self.pause, self.pace, self.anon, css_classes=["kv-c-tools"], **box),
            pn.FlexBox(self.follow_node, self.follow_link, self.follow, css_classes=["kv-c-tools"], **box),
            self.said, self.roster, sizing_mode="stretch_width", css_classes=["kv-c"])

    def give(self, name: str, node: str = "", query: str = "") -> bool:
        """One command to every student's page; the line under the buttons says what it did."""
        keys = tuple(key for key, _n, _t in self.outline)
        try:
            self.state = class_state.command(self.store, keys, name, node, query)
        except ValueError as e:
            self.said.object = status_html(str(e), "error")
            return False
        except StoreError:
            log.exception("a teacher's command")
            self.said.object = status_html("The class database cannot be written just now: try again.",
                                           "error")
            return False
        number = {key: num for key, num, _t in self.outline}
        self.said.object = status_html({
            "pause": "The class is paused: every student's page says “Eyes on the teacher”.",
            "resume": "The class runs again.",
            "pace": f"Students may go up to node {number.get(node, '')}." if node
                else "Students may go anywhere.",
            "follow": f"Every student's page is brought to node {number.get(node, '')}"
                      f"{' at that state' if query else ''}.",
        }[name], "ok")
        self._show_state()
        return True

    def _anonymised(self) -> None:
        self.anon.label = ANON[self.anonymous]
        self.refresh(force=True)

    def _show_state(self) -> None:
        self.pause.label = PAUSE[self.state.paused]
        self.pause.button_type = "success" if self.state.paused else "warning"
        if self.pace.value != self.state.pace:
            self.pace.value = self.state.pace

    def refresh(self, force: bool = False) -> None:
        try:
            self.state = class_state.current(self.store)
            seen = roster.seen(self.store, time.time())
        except StoreError:
            log.exception("reading the roster")
            return
        self._show_state()
        text = roster_html(seen, self.outline, time.time(), self.anonymous)
        if force or text != self._roster_html:
            self._roster_html = self.roster.object = text

    def __panel__(self):
        return self._layout
