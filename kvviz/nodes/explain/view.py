"""Explain it back's view: the question, live facts, self-checks and a download of the answer with its state."""

from __future__ import annotations

import html
import io

import panel as pn
import param

from kvviz.handin.view import HandInView
from kvviz.nodes.explain.state import CHECKS, ExplainState
from kvviz.nodes.explain.text import PROSE, QUESTION
from kvviz.web.live_html import LiveHTML
from kvviz.web.redraw import Redraw


def facts_html(state: ExplainState, *_deps) -> str:
    items = "".join(f"<li>{html.escape(f)}</li>" for f in state.facts())
    return f'<div class="kv-facts"><div class="kv-facts-title">What the live state shows</div><ul>{items}</ul></div>'


def feedback_html(state: ExplainState, key: str, feedback: dict) -> str:
    said = feedback.get(key, "")
    ok = said.startswith("Right")
    cls = "kv-feedback kv-right" if ok else ("kv-feedback kv-wrong" if said else "kv-feedback")
    return f'<div class="{cls}" data-check="{key}" role="status">{html.escape(said)}</div>'


class ExplainView(pn.viewable.Viewer):
    state = param.ClassSelector(class_=ExplainState)
    on_interact = param.Callable(default=None, doc="unused: explain it back has no engine of its own")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        live = [s.fragmentation.param.snapshot, s.paging.param.paged, s.paging.param.contiguous,
                s.radix.param.snapshot]
        facts = LiveHTML(facts_html(s), sizing_mode="stretch_width")
        redraw = Redraw(lambda: setattr(facts, "object", facts_html(s)))
        for p in live:
            p.owner.param.watch(redraw, p.name)
        checks = []
        for c in CHECKS:
            box = pn.widgets.TextInput(label="Your answer", placeholder="a whole number", width=160)
            button = pn.widgets.Button(label="Check", color="primary", align="end")
            button.on_click(lambda _e, c=c, box=box: s.check(c.key, box.value_input or box.value))
            box.param.watch(lambda _e, c=c, box=box: s.check(c.key, box.value), "enter_pressed")
            checks.append(pn.Column(
                pn.pane.HTML(f'<div class="kv-question">{html.escape(c.question)}</div>', margin=(0, 10)),
                pn.Row(box, button),
                LiveHTML(pn.bind(feedback_html, s, c.key, s.param.feedback), margin=(0, 10)),
                css_classes=["kv-check"], sizing_mode="stretch_width",
            ))
        answer = pn.widgets.TextAreaInput.from_param(
            s.param.answer, placeholder="Paging borrows … ; radix sharing borrows … ; they differ in …",
            sizing_mode="stretch_width", height=180, max_length=5000)
        download = pn.widgets.FileDownload(
            callback=lambda: io.StringIO(s.markdown()), filename="kv-cache-answer.md",
            label="Download my answer with the live state (Markdown)", color="success",
            sizing_mode="stretch_width", max_width=460,
        )
        self._layout = pn.Column(
            pn.pane.Markdown(PROSE, sizing_mode="stretch_width", css_classes=["kv-prose"]),
            pn.pane.HTML(f'<blockquote class="kv-big-question">{html.escape(QUESTION)}</blockquote>',
                         sizing_mode="stretch_width"),
            answer,
            facts,
            pn.pane.Markdown("#### Check yourself against the live engine", sizing_mode="stretch_width",
                             css_classes=["kv-prose"]),
            pn.FlexBox(*checks, flex_wrap="wrap", sizing_mode="stretch_width"),
            download,
            HandInView.around(s),
            sizing_mode="stretch_width", css_classes=["kv-node", "kv-node-explain"],
        )

    def set_visible(self, visible: bool) -> None:
        """(Nothing animates here.)"""

    def __panel__(self):
        return self._layout
