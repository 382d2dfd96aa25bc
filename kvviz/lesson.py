"""One browser session's lesson: the node states (restored from the URL), their views, the URL
sync and the keyboard. `app.py` builds one per session and serves `full_page()` or `node_page()`.
Every node comes from the registry (kvviz/nodes/__init__.py).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import panel as pn

from kvviz import page_text, urlstate
from kvviz.handin import collect
from kvviz.handin.session import HandInSession
from kvviz.nodes import BY_KEY, LIVE, NODES
from kvviz.web import stylesheet
from kvviz.web.connection import ConnectionNotice
from kvviz.web.keep_open import KeepOpen
from kvviz.web.keyboard import Keyboard
from kvviz.web.lazy import LazySlot
from kvviz.web.live_html import LiveHTML
from kvviz.web.nav import Nav, items_html
from kvviz.web.timer import SessionTimer

CSS_PATH = Path(__file__).resolve().parent.parent / "assets" / "kvviz.css"
# The stylesheet's URL, relative to the page (/app), served by Panel's own /components/ route
# (kvviz/web/stylesheet.py); its version query changes with its content.
STYLESHEET_URL = stylesheet.url("assets/kvviz.css")
LIVE_NODES = tuple(n.key for n in LIVE)
NAV_HTML = items_html([(n.key, n.number, n.title) for n in NODES])
SYSTEM_FONTS = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
VIEWPORT = "width=device-width, initial-scale=1"  # phones lay the page out at their own width


# The page's icon, inline: a page that rewrites its address (the URL state) asks for none.
ICON = ("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
        "%3Crect width='7' height='7' fill='%23E69F00'/%3E%3Crect x='9' width='7' height='7' "
        "fill='%2356B4E9'/%3E%3Crect y='9' width='7' height='7' fill='%23009E73'/%3E%3Crect x='9' y='9' "
        "width='7' height='7' fill='%23cccccc'/%3E%3C/svg%3E")


# A node served alone (and a recorded page) has no template: Panel's base page, plus the viewport
# tag, the icon, and its content as the page's main landmark.
NODE_PAGE_TEMPLATE = (f'{{% block postamble %}}<meta name="viewport" content="{VIEWPORT}">'
                      f'<link rel="icon" href="{ICON}">{{% endblock %}}'
                      '{% block contents %}<main>{{ super() }}</main>{% endblock %}')


def opening(heading: bool) -> list:
    """The lesson's frame before its nodes, on the live page and the played one alike: the title
    (`heading`: as the page's h1, where no template shows it), the short intro, the three ideas
    (the numbered navigation)."""
    title = [pn.pane.HTML(f'<h1 class="kv-title">{html.escape(page_text.TITLE)}</h1>',
                          sizing_mode="stretch_width", margin=(0, 10))] if heading else []
    return [*title,
            pn.pane.Markdown(page_text.INTRO, sizing_mode="stretch_width",
                             css_classes=["kv-prose", "kv-intro"]),
            # (with no sidebar to hold them, the page shows them in a row on every screen)
            Nav(items_html=NAV_HTML, sizing_mode="stretch_width",
                css_classes=["kv-nav-always"] if heading else [])]


def page_heading(key: str) -> pn.pane.HTML:
    """A page of one node: the lesson's title and the node's, as the page's h1 for assistive
    technology (the node's own heading shows it on screen)."""
    n = BY_KEY[key]
    hidden = ("position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);"
              "white-space:nowrap;margin:0")
    return pn.pane.HTML(f'<h1 style="{hidden}">{html.escape(page_text.TITLE)}: {html.escape(n.number)} · '
                        f'{html.escape(n.title)}</h1>', margin=0, height=0, width=0)


def closing() -> list:
    """The lesson's frame after its nodes: the three ideas in short, and what to read next."""
    return [pn.pane.Markdown(page_text.SUMMARY, sizing_mode="stretch_width",
                             css_classes=["kv-prose", "kv-summary"]),
            pn.pane.Markdown(page_text.NEXT, sizing_mode="stretch_width",
                             css_classes=["kv-prose", "kv-next"])]


def link_notice_html(notices: list[str]) -> str:
    if not notices:
        return ""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notices)
    return f'<div class="kv-url-notice" role="alert"><b>About this link:</b><ul>{items}</ul></div>'


def recording_html(line: str | None) -> str:
    """The line the live page shows while the server makes the recorded lesson (none after)."""
    if not line:
        return ""
    return f'<p class="kv-recording-progress" role="status">{html.escape(line)}</p>'


class Lesson:
    def __init__(self, args: dict[str, list] | None = None,
                 recording: Callable[[], str | None] | None = None):
        """`args`: the page's query (its link's state). `recording`: what the server is recording,
        in a sentence (None when nothing: the recorded lesson is ready), shown at the top of the
        page and read again every 2 s until it is None (app.py hands it kvviz/export/cache_folder.py's)."""
        self.recording = recording
        self.url = urlstate.parse(args or {})
        self.states: dict = {}
        for n in NODES:
            self.states[n.key] = n.new_state(self.states)
        self.link_notices = urlstate.restore(self.url, self.states)
        # One hand-in per session, shared by the explain box and every node's prediction panel.
        self.handin = HandInSession(states=self.states, describe=self.describe)
        self.active = self.url.node if self.url.node in LIVE_NODES else LIVE_NODES[0]
        self.keyboard = Keyboard(self.on_key, height=0, width=0, margin=0)
        self.keep_open = KeepOpen()  # (the <details> a student opened, open as the panes redraw)
        self._views: dict[str, pn.viewable.Viewer] = {}
        self._slots: dict[str, LazySlot] = {}

    @staticmethod
    def describe(states: dict) -> tuple[str, dict]:
        """What a hand-in holds of these states besides the answers: the lesson's link and the
        headline cards' texts of every live node (kvviz/handin/collect.py)."""
        return urlstate.query(None, states), collect.metrics(states, LIVE)

    # -- interaction ---------------------------------------------------------------------
    def touch(self, key: str) -> None:
        if key in LIVE_NODES:
            self.active = key

    def on_key(self, action: str, node: str | None) -> None:
        """A shortcut from the keyboard component, for the node in view (else the last touched)."""
        if self.url.node:
            node = self.url.node
        key = node if node in LIVE_NODES else self.active
        if key not in LIVE_NODES:
            return
        state = self.states[key]
        self.active = key
        {"play": state.toggle_play, "step": state.step, "back": state.step_back,
         "reset": state.reset}[action]()

    # -- views -----------------------------------------------------------------------------
    def view(self, key: str):
        if key not in self._views:
            self._views[key] = BY_KEY[key].new_view(self.states[key], on_interact=self.touch,
                                                     handin=self.handin)
        return self._views[key]

    def slot(self, key: str) -> LazySlot:
        """Node `key`'s place in the full page: built when the student scrolls near it."""
        if key not in self._slots:
            n = BY_KEY[key]
            slot = LazySlot(key=key, build=lambda: self.view(key),
                            placeholder=f"{n.number} · {n.title}: loading the live engine…")
            # (a section built while on screen starts animating when it is in the page)
            slot.param.watch(lambda _e: self.view(key).set_visible(slot.in_view) if slot.built else None,
                             ["in_view", "built"])
            self._slots[key] = slot
        return self._slots[key]

    def _notice_pane(self) -> pn.Column:
        """The page's notices: what its link could not restore, and while the server records the
        lesson, how far it has got (kept current)."""
        link = LiveHTML(link_notice_html(self.link_notices), sizing_mode="stretch_width")
        line = self.recording() if self.recording is not None else None
        if not line:
            return pn.Column(link, sizing_mode="stretch_width", margin=0)
        self.progress = LiveHTML(recording_html(line), sizing_mode="stretch_width")
        self._progress_timer = SessionTimer(self.refresh_progress, 2000, anywhere=True)
        return pn.Column(link, self.progress, sizing_mode="stretch_width", margin=0)

    def refresh_progress(self) -> None:
        """Read the recording's progress again (every 2 s while it is made); gone when it is done."""
        now = self.recording()
        self.progress.object = recording_html(now)
        if not now:
            self._progress_timer.stop()

    def node_page(self, key: str) -> pn.Column:
        """One node alone, no template chrome (for an iframe)."""
        page = pn.Column(page_heading(key), self._notice_pane(), self.view(key), self.keyboard,
                         self.keep_open, ConnectionNotice(width=0, height=0, margin=0),
                         sizing_mode="stretch_width",
                         css_classes=["kv-embed"], margin=(8, 14))
        if pn.state.curdoc is not None:
            pn.state.curdoc.template = NODE_PAGE_TEMPLATE
        self.sync_url()
        return page

    def full_page(self) -> pn.template.FastListTemplate:
        intro = pn.Column(self._notice_pane(), *opening(heading=False), sizing_mode="stretch_width")
        # The first node is built with the page; the others when the student gets near them.
        main = [intro] + [self.slot(n.key) for n in NODES]
        self.slot(NODES[0].key).reveal()
        main.append(pn.Column(*closing(),
                              pn.pane.Markdown(page_text.FOOTER, css_classes=["kv-footer"]), self.keyboard,
                              self.keep_open, ConnectionNotice(width=0, height=0, margin=0),
                              sizing_mode="stretch_width"))
        template = pn.template.FastListTemplate(
            title=page_text.TITLE,
            sidebar=[Nav(items_html=NAV_HTML, vertical=True, sizing_mode="stretch_width")], main=main,
            main_max_width="1280px", header_background="#1d3557", accent_base_color="#0072B2",
            sidebar_width=230, theme_toggle=False, font=SYSTEM_FONTS, meta_viewport=VIEWPORT,
            # No busy spinner: Panel drives every session's spinner from one process-wide busy flag,
            # so each event in any session updated every session's page (a quarter of a class
            # server's CPU with 20 students per process, growing with the square of the class).
            busy_indicator=None,
        )
        template.config.raw_css.append(TEMPLATE_CSS)  # into the page head, not a shadow root
        self.sync_url()
        return template

    # -- the URL ---------------------------------------------------------------------------
    def query(self) -> str:
        return urlstate.query(self.url.node, self.states)

    def sync_url(self) -> None:
        """Keep the browser's address bar equal to the states (a copied link reproduces them)."""
        location = pn.state.location
        if location is None:
            return

        def write():
            q = self.query()
            if location.search != q:
                location.search = q

        urlstate.watch(self.states, write)


# The template's own (light-DOM) elements, which component stylesheets cannot reach: on a phone
# the sidebar would take most of the screen, so it is hidden there (the intro has the same
# numbered navigation); the title shrinks to fit.
TEMPLATE_CSS = """
@media (max-width: 760px) {
  #sidebar, #sidebar-button { display: none !important; }
  #header .app-header .title { font-size: 1.15rem; min-height: 44px; display: inline-flex; align-items: center; }
  #main .card-margin { margin: 4px !important; }
}
@media (min-width: 1600px) {
  #header .app-header .title { font-size: 2.2rem; }
}
"""  # noqa: E501 (data: a string kept as written)
