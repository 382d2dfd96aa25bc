"""Explain it back's view: the question, live facts, self-checks answered by the engine, the
session's predictions and a download of the answer with its state."""

from __future__ import annotations

import html
import io

import panel as pn
import param

from kvviz.controls.step_links import step_links
from kvviz.handin.session import HandInSession
from kvviz.handin.view import HandInView
from kvviz.nodes.explain import text
from kvviz.nodes.explain.checks import CHECKS
from kvviz.nodes.explain.state import ExplainState
from kvviz.state.predict import ResolvedPrediction
from kvviz.web.live_html import LiveHTML, bound_html
from kvviz.web.redraw import Redraw


def facts_html(state: ExplainState, *_deps) -> str:
    items = "".join(f"<li>{html.escape(f)}</li>" for f in state.facts())
    return (f'<div class="kv-facts"><div class="kv-facts-title">What the live state shows</div>'
            f'<ul>{items}</ul></div>')


def feedback_html(state: ExplainState, key: str, feedback: dict) -> str:
    said = feedback.get(key, "")
    done = state.responses.get(key)
    ok = said.startswith("Right") or (said.startswith("You answered") and done is not None and done.right)
    cls = "kv-feedback kv-right" if ok else ("kv-feedback kv-wrong" if said else "kv-feedback")
    return f'<div class="{cls}" data-check="{html.escape(key)}" role="status">{html.escape(said)}</div>'


def question_html(state: ExplainState, key: str) -> str:
    return (
        f'<div class="kv-question" data-check="{html.escape(key)}">{html.escape(state.question(key))}</div>')


def predictions_html(predictions: list[ResolvedPrediction], outline=()) -> str:
    """`outline`: the lesson's nodes, (key, number, title) each: a prediction is named by its node's
    number."""
    if not predictions:
        return ""
    numbers = {key: number for key, number, _title in outline}
    e = html.escape
    def where(p: ResolvedPrediction) -> str:  # (a self-check's question already names its node)
        if p.node not in numbers:
            return ""
        node = f"Node {numbers[p.node]}"
        return "" if p.question.startswith(node) else f"{node}: "

    items = "".join(
        f'<li class="{"kv-right" if p.right else "kv-wrong"}">{e(where(p))}'
        f'{e(p.question)} <b>You: {e(p.predicted)} · engine: {e(p.outcome)}</b>'
        f'{" " + e(p.why[:1].upper() + p.why[1:]) if p.why else ""}</li>' for p in predictions)
    return (f'<div class="kv-predictions"><div class="kv-facts-title">{e(text.PREDICTIONS_TITLE)}</div>'
            f'<ul>{items}</ul></div>')


class ExplainView(pn.viewable.Viewer):
    state = param.ClassSelector(class_=ExplainState)
    on_interact = param.Callable(default=None, doc="unused: explain it back has no engine of its own")
    outline = param.Parameter(default=(), doc="the lesson's nodes, (key, number, title) each (Node.outline)")
    handin = param.ClassSelector(class_=HandInSession, default=None,
                                 doc="the session's hand-in (Lesson.handin); default: one over this state's "
                                     "own")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        # (each part the played page drives has a class of its own: kvviz/export/checks.py finds it by that)
        facts = LiveHTML(facts_html(s), sizing_mode="stretch_width", css_classes=["kv-explain-facts"])
        questions = {c.key: LiveHTML(question_html(s, c.key), margin=(0, 10),
                                     css_classes=[f"kv-check-question-{c.key}"])
                     for c in CHECKS}

        def redraw_live():
            facts.object = facts_html(s)
            for key, pane in questions.items():
                pane.object = question_html(s, key)

        redraw = Redraw(redraw_live)
        for node in s.nodes:
            node.param.watch(redraw, "version")
        s.param.watch(lambda _e: setattr(facts, "object", facts_html(s)), "responses")
        checks = []
        for c in CHECKS:
            box = pn.widgets.TextInput(label="Your answer", placeholder="a whole number", width=160,
                                       max_length=6, css_classes=[f"kv-check-box-{c.key}"])
            button = pn.widgets.Button(label="Check", color="primary", align="end",
                                       css_classes=[f"kv-check-button-{c.key}"])
            button.on_click(lambda _e, c=c, box=box: s.check(c.key, box.value_input or box.value))
            box.param.watch(lambda _e, c=c, box=box: s.check(c.key, box.value), "enter_pressed")
            checks.append(pn.Column(
                questions[c.key], pn.Row(box, button),
                bound_html(lambda c=c: feedback_html(s, c.key, s.feedback), s.param.feedback, margin=(0, 10),
                         css_classes=[f"kv-check-feedback-{c.key}"]),
                css_classes=["kv-check"], sizing_mode="stretch_width",
            ))
        answer = pn.widgets.TextAreaInput.from_param(
            s.param.answer, placeholder="Paging borrows … ; radix sharing borrows … ; they differ in …",
            sizing_mode="stretch_width", height=180, max_length=5000, css_classes=["kv-explain-answer"])
        download = pn.widgets.FileDownload(
            callback=lambda: io.StringIO(s.markdown()), filename="kv-cache-answer.md",
            label="Download my answer with the live state and my predictions (Markdown)", color="success",
            sizing_mode="stretch_width", max_width=560, css_classes=["kv-download"],
        )
        self.handin_box = HandInView(session=self.handin) if self.handin is not None else HandInView.around(s)
        self._layout = pn.Column(
            pn.pane.Markdown(text.PROSE, sizing_mode="stretch_width", css_classes=["kv-prose"]),
            pn.pane.HTML(f'<blockquote class="kv-big-question">{html.escape(text.QUESTION)}</blockquote>',
                         sizing_mode="stretch_width"),
            answer,
            facts,
            pn.pane.Markdown(text.CHECKS_HEADING, sizing_mode="stretch_width", css_classes=["kv-prose"]),
            pn.FlexBox(*checks, flex_wrap="wrap", sizing_mode="stretch_width"),
            bound_html(lambda: predictions_html(s.predictions, self.outline), s.param.predictions,
                       sizing_mode="stretch_width", css_classes=["kv-explain-predictions"]),
            download,
            self.handin_box,
            step_links("explain", self.outline),
            sizing_mode="stretch_width", css_classes=["kv-node", "kv-node-explain"],
        )

    def set_visible(self, visible: bool) -> None:
        """(Nothing animates here.)"""

    def __panel__(self):
        return self._layout
