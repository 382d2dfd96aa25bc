"""The teacher page (/teacher, served by teacher.py): the class's hand-ins, live.

Locked until the passphrase (kvviz/handin/key.py) is typed into its password field: before
that the page holds a login box and nothing else (the class's widgets are not even built). Once
open, it polls the database's revision every POLL_MS (one tiny query) and redraws when a
hand-in arrived, changed or was cleared in any server process: new hand-ins appear within
POLL_MS plus a redraw. It summarises each question, lists the hand-ins (newest first, searchable
by name) each with a link that opens its state in a new tab, exports CSV, and clears the class
after a confirmation. Above them, the class pulse (pulse.py): a chart per prediction of what the
class predicted, the engine's answer hidden until the teacher reveals it; "Pulse only" hides the
names, verdicts and summary below it, for the projector.
"""

from __future__ import annotations

import io
import logging
import os
import time

import panel as pn
import param

from kvviz.handin import key as passphrase
from kvviz.handin import roster
from kvviz.handin.class_controls import ClassControls
from kvviz.handin.model import HandIn, clean
from kvviz.handin.pulse import pulse
from kvviz.handin.pulse_html import pulse_html
from kvviz.handin.report import summarise, to_csv
from kvviz.handin.storage import Store, StoreError, shared
from kvviz.handin.teacher_html import VLLM_HINT_HTML, address_html, handins_html, header_html, summary_html
from kvviz.handin.view import status_html
from kvviz.web.live_html import LiveHTML
from kvviz.web.timer import SessionTimer

log = logging.getLogger("kvviz.handin")
POLL_MS = 1000  # how often an open teacher page looks for new hand-ins (the issue asks for 2 s)
QUESTION = "The written answer (explain it back)"

REVEAL = {False: "Reveal the engine's answers", True: "Hide the engine's answers"}
ONLY = {False: "Pulse only (for the projector)", True: "Show the hand-ins too"}

TITLE_HTML = (
    '<div class="kv-t-title"><h1>Your class</h1><p>Students hand in from the lesson\'s '
    '<b>Explain it back</b> node, or under any node\'s answered prediction: everything each student '
    'handed in appears here as it arrives, with their latest answer to each question.</p></div>'
)


class TeacherPage(pn.viewable.Viewer):
    store = param.ClassSelector(class_=Store, default=None, doc="default: the class database (KVVIZ_DB)")
    unlocked = param.Boolean(default=False, doc="the passphrase was typed in this session")
    reveal = param.Boolean(default=False, doc="the class pulse shows the engine's answers")
    pulse_only = param.Boolean(default=False, doc="only the class pulse is shown (for the projector)")
    projector = param.List(default=[], doc="more sections for the projector, shown once the class is open "
                           "(teacher.py: the class's own cache)")
    outline = param.Parameter(default=(),
                              doc="every node's (key, number, title), in page order (teacher.py: the "
                          "registry's): the roster's columns, what may be paced or followed")

    def __init__(self, **params):
        super().__init__(**params)
        self.attempts = passphrase.Attempts()
        self.key = pn.widgets.PasswordInput(label="Teacher passphrase", width=340,
                                            css_classes=["kv-t-key", "kv-t-big"],
                                            placeholder="printed where the lesson server was started")
        self.open = pn.widgets.Button(label="Open the class", color="primary", align="end",
                                      css_classes=["kv-t-big"])
        self.login_status = LiveHTML(status_html(), sizing_mode="stretch_width")
        self.open.on_click(lambda _e: self.unlock(self.key.value_input or self.key.value))
        # (a password field sends its value on Enter or when it loses focus; never kept: see unlock)
        self.key.param.watch(lambda e: self.unlock(e.new) if e.new else None, "value")
        login = pn.Column(pn.FlexBox(self.key, self.open, flex_wrap="wrap", align_items="flex-end"),
                          self.login_status, sizing_mode="stretch_width", css_classes=["kv-t-login"])
        self._layout = pn.Column(pn.pane.HTML(TITLE_HTML, sizing_mode="stretch_width"), login,
                                 sizing_mode="stretch_width", css_classes=["kv-teacher"], margin=(8, 24))
        self._rev, self._handins = -1, []

    def _store(self) -> Store:
        return self.store or shared()

    # -- the passphrase ----------------------------------------------------------------------------
    def unlock(self, typed: str) -> bool:
        """Open the class if `typed` is the passphrase; the field is emptied either way."""
        self.key.param.update(value="", value_input="")
        if self.unlocked or not typed:
            return self.unlocked
        if (wait := self.attempts.wait_s()) > 0:
            self.login_status.object = status_html(f"Wait {max(1, round(wait))} s before trying again.",
                                                   "error")
            return False
        try:
            right = passphrase.matches(typed, self._store())
        except StoreError:
            log.exception("reading the teacher passphrase")
            self.login_status.object = status_html("The class database cannot be opened: see the server's "
                                                   "log.",
                                                   "error")
            return False
        if not right:
            self.attempts.failed()
            self.login_status.object = status_html("That is not the passphrase.", "error")
            return False
        self.attempts.succeeded()
        self.unlocked = True
        self._build_class()
        return True

    # -- the class ---------------------------------------------------------------------------------
    def _build_class(self) -> None:
        self.search = pn.widgets.TextInput(label="Search by name", placeholder="part of a name", width=300,
                                           css_classes=["kv-t-search", "kv-t-big"])
        self.search.param.watch(lambda _e: self.refresh(force=True), "value_input")
        self.csv = pn.widgets.FileDownload(callback=self._csv,
                                           filename=f"kvviz-class-{time.strftime('%Y-%m-%d')}.csv",
                                           label="Export CSV", color="success", align="end", width=200,
                                           css_classes=["kv-t-csv", "kv-t-big"])
        self.clear_button = pn.widgets.Button(label="Clear the class…", color="danger", align="end",
                                              css_classes=["kv-t-big"])
        self.confirm_text = LiveHTML("", sizing_mode="stretch_width")
        yes = pn.widgets.Button(label="Yes, delete them", color="danger", css_classes=["kv-t-big"])
        no = pn.widgets.Button(label="Cancel", css_classes=["kv-t-big"])
        self.confirm = pn.Column(self.confirm_text, pn.Row(yes, no), visible=False,
                                 css_classes=["kv-t-confirm"], sizing_mode="stretch_width")
        self.clear_button.on_click(lambda _e: self.ask_clear())
        yes.on_click(lambda _e: self.clear())
        no.on_click(lambda _e: self.confirm.param.update(visible=False))
        self.count = LiveHTML("", sizing_mode="stretch_width")
        self.summary = LiveHTML("", sizing_mode="stretch_width")
        self.listing = LiveHTML("", sizing_mode="stretch_width")
        self.notice = LiveHTML(status_html(), sizing_mode="stretch_width")
        self.pulse = LiveHTML("", sizing_mode="stretch_width")
        self.reveal_button = pn.widgets.Button(label=REVEAL[False], color="primary",
                                               css_classes=["kv-p-reveal", "kv-t-big"])
        self.only_button = pn.widgets.Button(label=ONLY[False], css_classes=["kv-p-only", "kv-t-big"])
        self.reveal_button.on_click(lambda _e: setattr(self, "reveal", not self.reveal))
        self.only_button.on_click(lambda _e: setattr(self, "pulse_only", not self.pulse_only))
        self.param.watch(lambda _e: self._redraw_pulse(), ["reveal", "pulse_only"])
        self.details = pn.Column(
            pn.FlexBox(self.search, self.csv, self.clear_button, flex_wrap="wrap", align_items="flex-end",
                       sizing_mode="stretch_width", css_classes=["kv-t-tools"]),
            self.confirm, self.notice, self.count, self.summary, self.listing, sizing_mode="stretch_width")
        self.classroom = ClassControls(store=self._store(), outline=self.outline)
        self._layout.objects = [
            pn.pane.HTML(address_html(*self.student_address()), sizing_mode="stretch_width"),
            self._layout.objects[0], self.classroom,
            pn.FlexBox(self.reveal_button, self.only_button, flex_wrap="wrap", sizing_mode="stretch_width",
                       css_classes=["kv-p-tools"]),
            self.pulse, *[section() for section in self.projector], self.details,
            pn.pane.HTML(VLLM_HINT_HTML, sizing_mode="stretch_width"),
        ]
        self.refresh(force=True)
        SessionTimer(self.refresh, POLL_MS)

    @staticmethod
    def student_address(environ=os.environ) -> tuple[str, bool]:
        """The address students open: KVVIZ_STUDENT_URL (`make class` sets it), else this page's
        own origin; and whether that names this machine only (localhost)."""
        given = (environ.get("KVVIZ_STUDENT_URL") or "").strip()
        loc = pn.state.location
        if not given and loc is not None and loc.hostname:
            given = f"{loc.protocol}//{loc.hostname}{':' + loc.port if loc.port else ''}/"
        given = given or "http://localhost:5006/"
        host = given.split("//", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
        return given, host in ("localhost", "") or host.startswith("127.") or host == "[::1]"

    def shown(self) -> list[HandIn]:
        """The hand-ins whose name contains the search text (any case)."""
        typed = clean(self.search.value_input or self.search.value, 60).casefold()
        return [h for h in self._handins if typed in h.name.casefold()] if typed else list(self._handins)

    def refresh(self, force: bool = False) -> None:
        """Redraw if anything was handed in, changed or cleared since the last look (or `force`)."""
        if not self.unlocked:
            return
        self.classroom.refresh(force=force)
        try:
            rev = self._store().revision()
            if rev == self._rev and not force:
                return
            if rev != self._rev:
                self._handins = self._store().handins()
                self._rev = rev
        except StoreError:
            log.exception("reading the hand-ins")
            self.notice.object = status_html("The class database cannot be read just now.", "error")
            return
        shown, everyone = self.shown(), self._handins
        search = clean(self.search.value_input or self.search.value, 60)
        with pn.io.hold():
            self.count.object = header_html(len(everyone), len(shown), max((h.updated_at for h in everyone),
                                                                            default=0), search)
            self.summary.object = summary_html(summarise(everyone, QUESTION), len(everyone))
            self.listing.object = handins_html(shown, len(everyone), search)
            self.pulse.object = pulse_html(pulse(everyone, self.reveal), self.reveal)

    def _redraw_pulse(self) -> None:
        """After Reveal/Hide or Pulse only: the buttons' words, the chart, and what is shown."""
        self.reveal_button.label = REVEAL[self.reveal]
        self.only_button.label = ONLY[self.pulse_only]
        self.details.visible = not self.pulse_only
        self.pulse.object = pulse_html(pulse(self._handins, self.reveal), self.reveal)

    def _csv(self) -> io.StringIO:
        if not self.unlocked:
            return io.StringIO("")
        loc = pn.state.location
        base = (f"{loc.protocol}//{loc.hostname}{':' + loc.port if loc.port else ''}/" if loc and loc.hostname
                else "")
        return io.StringIO(to_csv(self._store().handins(), base))

    def ask_clear(self) -> None:
        self.refresh()
        self._clear_rev = self._rev
        n = len(self._handins)
        self.confirm_text.object = status_html(
            f"Delete all {n} hand-in{'s' if n != 1 else ''} for good? This cannot be undone "
            "(export the CSV first to keep them); the live roster starts again empty. A hand-in that arrives "
            "after this question stays.", "error")
        self.confirm.visible = True

    def clear(self) -> None:
        if not self.unlocked:
            return
        self.confirm.visible = False
        deleted = self._store().clear(up_to=getattr(self, "_clear_rev", -1))
        roster.clear(self._store(), time.time())  # (a new class: the roster starts empty too)
        self.notice.object = status_html(f"Deleted {deleted} hand-in{'s' if deleted != 1 else ''}.", "ok")
        self.refresh(force=True)

    def __panel__(self):
        return self._layout
