"""The class pulse as HTML: one horizontal bar chart per question (plain HTML and CSS, styled in
assets/handin.css), each with its sentence as the text alternative.

Every value (a question, a predicted value, an outcome, a node) goes through html.escape; the
only other things written are counts and widths computed here. The bars are hidden from screen
readers because the sentence under them says the same.
"""

from __future__ import annotations

import html

from kvviz.handin.pulse import Bar, Pulse

e = html.escape
KINDS = {"prediction": "Prediction", "check": "Self-check"}


def _bar(b: Bar, most: int, students: int) -> str:
    width = round(100 * b.count / most) if most else 0
    share = f"{round(100 * b.count / students)}%" if students else ""
    mark = '<span class="kv-p-mark">◀ the engine</span>' if b.engine else ""
    return (f'<li class="kv-p-bar" data-engine="{str(b.engine).lower()}" data-other="{str(b.other).lower()}">'
            f'<span class="kv-p-value">{e(b.value)}</span>'
            f'<span class="kv-p-track"><span class="kv-p-fill" style="width:{width}%"></span></span>'
            f'<span class="kv-p-count">{b.count}<small> {share}</small></span>{mark}</li>')


def question_html(p: Pulse, number: int) -> str:
    most = max((b.count for b in p.bars), default=0)
    bars = "".join(_bar(b, most, p.students) for b in p.bars)
    who = f"{p.students} student{'s' if p.students != 1 else ''}"
    return (f'<figure class="kv-p-q" data-kind="{e(p.kind)}" data-node="{e(p.node)}" '
            f'data-revealed="{str(p.revealed).lower()}">'
            f'<figcaption><span class="kv-p-n">Q{number}</span> <span class="kv-t-kind">'
            f'{e(KINDS.get(p.kind, p.kind))} · {e(p.node)} · {who}</span>'
            f'<span class="kv-p-text">{e(p.question)}</span></figcaption>'
            f'<ul class="kv-p-bars" aria-hidden="true">{bars}</ul>'
            f'<p class="kv-p-says">{e(p.sentence())}</p></figure>')


def pulse_html(pulses: list[Pulse], reveal: bool) -> str:
    state = ("The engine's answers are shown (green, ◀)." if reveal else
             "The engine's answers are hidden: the class sees only its own spread.")
    head = (f'<div class="kv-p-head"><h2>Class pulse: what the class predicted</h2>'
            f'<p role="status">{e(state)}</p></div>')
    if not pulses:
        return (f'<section class="kv-p" aria-label="Class pulse">{head}<p class="kv-t-empty">No predictions '
                'handed in yet: each question gets a chart here as students predict and hand '
                'in.</p></section>')
    body = "".join(question_html(p, i) for i, p in enumerate(pulses, 1))
    return (
        f'<section class="kv-p" aria-label="Class pulse">{head}<div class="kv-p-grid">{body}</div></section>')
