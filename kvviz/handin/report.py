"""The class at a glance: a summary per question, and every hand-in as CSV.

Both are plain data and text; the teacher page escapes them for HTML (teacher_html.py), and the
CSV escapes cells a spreadsheet would run as a formula.
"""

from __future__ import annotations

import csv
import io
import time
from collections import Counter
from dataclasses import dataclass, field

from kvviz.handin.model import HandIn, compact

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
TOP_WRONG = 3


@dataclass
class Question:
    """One question across the class: how many answered, how many of the judged were right,
    and the most common wrong answers as (answer, how many)."""

    kind: str  # 'answer', 'check' or 'prediction'
    question: str
    node: str = ""
    answered: int = 0
    right: int = 0
    judged: int = 0
    wrong: list[tuple[str, int]] = field(default_factory=list)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def summarise(handins: list[HandIn], question: str = "") -> list[Question]:
    """The written answer first, then each self-check and each prediction, in first-seen order."""
    out = [Question("answer", question or "The written answer",
                    answered=sum(bool(h.answer) for h in handins))]
    groups: dict[tuple, Question] = {}
    wrong: dict[tuple, Counter] = {}
    shown: dict[tuple, dict[str, str]] = {}
    for h in handins:
        items = [("check", c.key, c.question, c.typed, c.right) for c in h.checks]
        items += [("prediction", p.node, p.question, p.predicted, p.right) for p in h.predictions]
        for kind, node, q, said, right in items:
            g = (kind, node if kind == "prediction" else "", q)
            if g not in groups:
                groups[g] = Question(kind, q, node=node if kind == "prediction" else "")
                wrong[g], shown[g] = Counter(), {}
            s = groups[g]
            s.answered += bool(said)
            s.judged += right is not None
            s.right += right is True
            if right is False and said:
                wrong[g][_norm(said)] += 1
                shown[g].setdefault(_norm(said), said)
    for g, s in groups.items():
        s.wrong = [(shown[g][k], n) for k, n in wrong[g].most_common(TOP_WRONG)]
        out.append(s)
    return out


def when(t: float) -> str:
    """A stored time as the server's local date and time."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else ""


def cell(value) -> str:
    """A CSV cell: text, with a leading quote when a spreadsheet would read it as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def _verdict(right) -> str:
    return {True: "right", False: "wrong"}.get(right, "not judged")


COLUMNS = ("name", "first handed in", "last handed in", "hand-ins", "answer", "self-checks right",
           "self-checks judged", "predictions right", "predictions judged", "self-checks", "predictions",
           "state link", "metrics")


def to_csv(handins: list[HandIn], base_url: str = "") -> str:
    """Every hand-in, one row each; `base_url` (e.g. 'http://host:5006/') makes the state link whole."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    w.writerow(COLUMNS)
    for h in handins:
        checks = " | ".join(f"{c.question} -> {c.typed} ({_verdict(c.right)})" for c in h.checks)
        preds = " | ".join(f"[{p.node}] {p.question} -> {p.predicted}; outcome: {p.outcome} "
                           f"({_verdict(p.right)})" for p in h.predictions)
        w.writerow([cell(v) for v in (
            h.name, when(h.created_at), when(h.updated_at), h.submissions, h.answer, *h.score("checks"),
            *h.score("predictions"), checks, preds, base_url + h.link(), compact(h.metrics))])
    return buf.getvalue()
