"""The teacher page's HTML: the summary table and one card per hand-in.

Every value that came from a student (names, answers, what was typed or predicted) and every
stored value goes through html.escape, attributes included: it is shown as text, never as HTML.
The only link is the state link, `app?` + a query that the storage accepts only as urlencode's
characters, so it cannot leave the lesson's own page.
"""

from __future__ import annotations

import html

from kvviz.handin.model import HandIn
from kvviz.handin.report import Question, when

e = html.escape
KINDS = {"answer": "Written answer", "check": "Self-check", "prediction": "Prediction"}


def _pct(right: int, judged: int) -> str:
    return f"{right} / {judged} right" if judged else "–"


def summary_html(questions: list[Question], total: int) -> str:
    rows = []
    for q in questions:
        where = f" <span class=\"kv-t-node\">({e(q.node)})</span>" if q.node else ""
        wrong = ", ".join(f"<span class=\"kv-t-wrong\">{e(a)}</span> ×{n}" for a, n in q.wrong) or "–"
        rows.append(
            f'<tr data-kind="{e(q.kind)}"><td><span class="kv-t-kind">{e(KINDS.get(q.kind, q.kind))}</span> '
            f'{e(q.question)}{where}</td><td class="kv-t-num">{q.answered} / {total}</td>'
            f'<td class="kv-t-num">{_pct(q.right, q.judged)}</td><td>{wrong}</td></tr>')
    return ('<table class="kv-t-summary"><caption>Each question across the class</caption><thead><tr>'
            '<th>Question</th><th>Answered</th><th>Right</th><th>Most common wrong answers</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _items_html(h: HandIn) -> str:
    lines = []
    for c in h.checks:
        mark = {True: "✓", False: "✗"}.get(c.right, "·")
        outcome = f" → {e(c.outcome)}" if c.outcome else ""
        lines.append(f'<li data-right="{e(str(c.right).lower())}">{mark} {e(c.question)} '
                     f'<b>{e(c.typed)}</b>{outcome}</li>')
    for p in h.predictions:
        mark = {True: "✓", False: "✗"}.get(p.right, "·")
        outcome = f" → {e(p.outcome)}" if p.outcome else ""
        lines.append(f'<li data-right="{e(str(p.right).lower())}">{mark} [{e(p.node)}] {e(p.question)} '
                     f'<b>{e(p.predicted)}</b>{outcome}</li>')
    return f'<ul class="kv-t-items">{"".join(lines)}</ul>' if lines else ""


def _metrics_html(h: HandIn) -> str:
    parts = []
    for node, cards in h.metrics.items():
        cells = "".join(f'<span class="kv-t-m"><i>{e(k)}</i> {e(v)}</span>'
                        for k, v in cards.items() if k != "step")
        parts.append(f'<div><span class="kv-t-node">{e(node)}</span>{cells}</div>')
    return f'<div class="kv-t-metrics">{"".join(parts)}</div>' if parts else ""


def card_html(h: HandIn) -> str:
    checks, preds = h.score("checks"), h.score("predictions")
    chips = []
    if checks[1]:
        chips.append(f'<span class="kv-t-chip">self-checks {_pct(*checks)}</span>')
    if preds[1]:
        chips.append(f'<span class="kv-t-chip">predictions {_pct(*preds)}</span>')
    again = f" · handed in {h.submissions}×" if h.submissions > 1 else ""
    answer = (f'<div class="kv-t-answer">{e(h.answer)}</div>' if h.answer
              else '<div class="kv-t-answer kv-t-none">(no written answer)</div>')
    return (
        f'<article class="kv-t-handin" data-name="{e(h.name)}">'
        f'<header><span class="kv-t-name">{e(h.name)}</span>'
        f'<span class="kv-t-when">{e(when(h.updated_at)[11:])}{e(again)}</span></header>'
        f'{answer}<div class="kv-t-chips">{"".join(chips)}</div>{_items_html(h)}{_metrics_html(h)}'
        f'<a class="kv-t-open" href="{e(h.link(), quote=True)}" target="_blank" rel="noopener noreferrer">'
        f'Open {e(h.name)}\'s state ↗</a></article>')


def handins_html(handins: list[HandIn], total: int, search: str = "") -> str:
    if not total:
        return (
            '<div class="kv-t-empty" role="status">No hand-ins yet. They appear here as students hand '
            'in.</div>')
    if not handins:
        return f'<div class="kv-t-empty" role="status">No name contains “{e(search)}”.</div>'
    return f'<div class="kv-t-list">{"".join(card_html(h) for h in handins)}</div>'


def header_html(total: int, shown: int, last: float, search: str) -> str:
    seen = f" · {shown} shown for “{e(search)}”" if search else ""
    latest = f" · latest {e(when(last)[11:])}" if last else ""
    return (
        f'<div class="kv-t-count" role="status"><b>{total}</b> '
        f'hand-in{"s" if total != 1 else ""}{seen}{latest}</div>')


# (for whoever runs the server, not the class: folded away at the foot of the page)
VLLM_HINT_HTML = (
    '<details class="kv-t-vllm"><summary>For whoever runs the server</summary><p>Node 04 shows a recording '
    'of a real vLLM until one answers: to show it live, run <code>make vllm</code> in a second terminal on '
    'the lesson\'s machine; node 04 connects by itself (docs/vllm.md).</p></details>'
)


def address_html(url: str, local: bool) -> str:
    """The address students open, in large type at the top of the page (`local`: it names this
    machine only, so students need its network address instead)."""
    where = ('<p class="kv-t-local">That is this machine\'s own name: students need its network address '
             '(<code>make class</code> prints it).</p>') if local else ""
    return (f'<div class="kv-t-address"><span>Students open</span> <a href="{e(url, quote=True)}" '
            f'target="_blank" rel="noopener noreferrer">{e(url)}</a>{where}</div>')
