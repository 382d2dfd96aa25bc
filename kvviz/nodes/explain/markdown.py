"""Explain it back's download as a readable Markdown answer: the question, the student's answer,
the self-checks and the predictions as tables (question, predicted, engine, right), what the live
state showed, and at the end the same as data, in a fenced JSON block.

Text from the student or from the state goes through `inline` (or `block` for the answer): every
character Markdown or HTML would act on is backslash-escaped, so a hostile answer reads as the
text it is when rendered (no HTML, no link, no code span), a pipe cannot end a table cell, and a
line cannot become a heading or a list. The JSON's backticks are written as \\u0060 (the same
JSON), so nothing inside can close its fence.
"""

from __future__ import annotations

import json
import re

from kvviz.state.predict import ResolvedPrediction

# Backslash escapes are defined by CommonMark for any ASCII punctuation; these are the ones that
# start emphasis, code, links, images, raw HTML, entities, strikethrough and table cells.
INLINE = re.compile(r"([\\`*_\[\]<>|~&!])")
# What a line may start with to become a heading, a quote, a list item or a setext underline.
LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+[.)])")


def inline(text) -> str:
    """`text` as one line of literal Markdown text (a table cell, a list item)."""
    return INLINE.sub(r"\\\1", " ".join(str(text).split()))


def block(text: str) -> str:
    """Multi-line user text as literal Markdown paragraphs: its lines (ended by a hard line break,
    two spaces) and blank lines kept."""
    lines = []
    for line in str(text).strip().splitlines():
        line = INLINE.sub(r"\\\1", line.strip())
        lines.append(LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), line))
    return "\n".join(a + "  " if a and b else a for a, b in zip(lines, [*lines[1:], ""], strict=True))


def table(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(inline(c) for c in row) + " |" for row in rows]
    return out


def data_block(record: dict) -> list[str]:
    """The record as JSON, one top-level key a line, in a fence nothing inside can close."""
    body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in record.items())
    return ["```json", ("{\n" + body + "\n}").replace("`", "\\u0060"), "```"]


def _right(entry: ResolvedPrediction) -> str:
    return {True: "✓ yes", False: "✗ no"}.get(entry.right, "–")


def _why(entries: list[ResolvedPrediction]) -> list[str]:
    """The engine's arithmetic for each row that has one, by the table's row number."""
    return [f"- ({i}) {inline(e.why[:1].upper() + e.why[1:])}" for i, e in enumerate(entries, 1) if e.why]


def document(title: str, question: str, answer: str, checks: list[ResolvedPrediction],
             predictions: list[ResolvedPrediction], facts: list[str], record: dict) -> str:
    """The whole download. `checks` and `predictions` are `ResolvedPrediction`s; `record` is the
    machine-readable data for the end (plain data: the predictions' `to_json()`)."""
    lines = [f"# {inline(title)}", "", "## The question", "", f"> {inline(question)}", "",
             "## My answer", "", block(answer) if answer.strip() else "*(no answer written yet)*", ""]
    for heading, entries, none in (("My predictions, and what the engine did", predictions, "none made yet"),
                                   ("Self-checks", checks, "none answered yet")):
        lines += [f"## {heading}", ""]
        if not entries:
            lines += [f"*({none})*", ""]
            continue
        rows = [(i, e.node, e.question, e.predicted, e.outcome, _right(e)) for i, e in enumerate(entries, 1)]
        lines += table(("#", "Node", "Question", "Predicted", "Engine", "Right"), rows) + [""]
        if why := _why(entries):
            lines += ["Why, from the engine:", "", *why, ""]
    lines += ["## What the live state showed", "", *(f"- {inline(f)}" for f in facts), ""]
    lines += ["## The same, as data", "", *data_block(record), ""]
    return "\n".join(lines)
