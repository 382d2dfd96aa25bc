"""A hand-in: what one student hands in, its caps and checks, and the per-session rate limit.

Everything a student can influence is plain text here: cleaned (control characters removed,
one line where one line is meant), capped in length, and later shown only as escaped text.
`HandIn.make` cleans and caps what it is given; `validate` (run by the storage before every
write) refuses anything that `make` would not produce. A self-check and a prediction as handed in
are frozen dataclasses (`HandInCheck`, `HandInPrediction`); they are plain data only at the
boundaries (a request's JSON, the stored JSON): `from_json` cleans and caps, `to_json` writes the
stored form. Standard library only.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import ClassVar, Self, TypeVar

MAX_NAME = 60  # characters of a display name
MAX_ANSWER = 5000  # characters of the written answer (the answer box's own limit too)
MAX_SHORT = 300  # a question, what was typed or predicted, an outcome, a feedback line
MAX_ITEMS = 40  # self-checks, and predictions, per hand-in
MAX_QUERY = 16_000  # characters of the state link's query
MAX_METRICS = 6000  # characters of the metrics' compact JSON
MAX_HANDINS = 2000  # students in one class database: a hand-in by a new student beyond it is refused

STUDENT_ID = re.compile(r"[0-9a-f]{32}")
# What urllib.parse.urlencode writes: letters, digits, _.-~, %XX and + (no quotes, no spaces).
QUERY = re.compile(r"(\?[A-Za-z0-9_.~+%=&-]*)?")


def clean(text, cap: int, multiline: bool = False) -> str:
    """`text` as plain text: no control or format characters (newlines kept when `multiline`),
    trimmed, at most `cap` characters. Anything that is not a string becomes ''."""
    if not isinstance(text, str):
        return ""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    keep = "\n" if multiline else ""
    text = "".join(ch if ch in keep or unicodedata.category(ch)[0] != "C" else " " for ch in text)
    if not multiline:
        text = " ".join(text.split())
    return text.strip()[:cap]


def check_student_id(value) -> str:
    if not isinstance(value, str) or not STUDENT_ID.fullmatch(value):
        raise ValueError("This page has no valid student id yet: reload the page and hand in again.")
    return value


def _right(value) -> bool | None:
    return value if isinstance(value, bool) else None


@dataclass(frozen=True)
class _Item:
    """What a handed-in self-check and prediction share: short text fields, then `right`."""

    KIND: ClassVar[str] = "item"

    @classmethod
    def text_fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name != "right")

    @classmethod
    def make(cls, /, **values) -> Self:
        """From untrusted values: each text field cleaned and capped (anything not a string, or
        missing, becomes ''), `right` True, False or None (anything else: not judged); other
        names are ignored."""
        return cls._cleaned(values)

    @classmethod
    def _cleaned(cls, values: dict) -> Self:
        return cls(**{f: clean(values.get(f, ""), MAX_SHORT) for f in cls.text_fields()},
                   right=_right(values.get("right")))

    @classmethod
    def from_json(cls, data) -> Self:
        """From plain data (a request's JSON, a stored hand-in's, of this format or an older one
        missing fields): cleaned and capped as `make` does; fields it does not know are ignored.
        ValueError when `data` is not a JSON object."""
        if not isinstance(data, dict):
            raise ValueError(f"A handed-in {cls.KIND} is a JSON object, not {type(data).__name__}.")
        return cls._cleaned(data)

    def to_json(self) -> dict:
        """The stored form: the text fields, then `right`, in that order."""
        return asdict(self)


ItemT = TypeVar("ItemT", bound=_Item)


@dataclass(frozen=True)
class HandInCheck(_Item):
    """A self-check as handed in: its key, the question as asked, what the student typed, the
    engine's answer, the feedback shown, and whether it was right (None: not judged)."""

    key: str = ""
    question: str = ""
    typed: str = ""
    outcome: str = ""
    feedback: str = ""
    right: bool | None = None
    KIND: ClassVar[str] = "self-check"


@dataclass(frozen=True)
class HandInPrediction(_Item):
    """A prediction as handed in: the node, the question as asked, what the student predicted,
    the engine's outcome, and whether it was right (None: not judged). The engine's arithmetic
    (`why`) is not handed in."""

    node: str = ""
    question: str = ""
    predicted: str = ""
    outcome: str = ""
    right: bool | None = None
    KIND: ClassVar[str] = "prediction"


def items(values, kind: type[ItemT]) -> tuple[ItemT, ...]:
    """At most MAX_ITEMS of `kind`, cleaned and capped, from untrusted values: instances of
    `kind` or plain data (JSON objects); anything else (counted towards the cap) is left out."""
    out = []
    for item in list(values or ())[:MAX_ITEMS]:
        if isinstance(item, kind):
            out.append(kind._cleaned(asdict(item)))  # (cleaned again: `validate` compares)
        elif isinstance(item, dict):
            out.append(kind.from_json(item))
    return tuple(out)


def _metrics(metrics) -> dict:
    """{node: {label: value text}} with short keys and values; {} when it would be too big."""
    out: dict[str, dict[str, str]] = {}
    for node, cards in (metrics or {}).items() if isinstance(metrics, dict) else ():
        if isinstance(cards, dict):
            out[clean(node, 40)] = {clean(k, 40): clean(v, 80) for k, v in list(cards.items())[:20]}
    return out if len(compact(out)) <= MAX_METRICS else {}


def compact(data) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class HandIn:
    """One student's hand-in. The times and the count are the storage's (0 until stored)."""

    student_id: str
    name: str
    answer: str = ""
    checks: tuple[HandInCheck, ...] = ()
    predictions: tuple[HandInPrediction, ...] = ()
    query: str = ""  # the state link's query ('?...', or '' for the defaults)
    metrics: dict = field(default_factory=dict)  # {node: {card label: value text}}
    created_at: float = 0.0
    updated_at: float = 0.0
    submissions: int = 0

    @classmethod
    def make(cls, student_id, name, answer="", checks=(), predictions=(), query="", metrics=None) -> HandIn:
        """A hand-in from untrusted values: cleaned and capped; ValueError (a sentence to show)
        for a bad student id or an empty name."""
        name = clean(name, MAX_NAME)
        if not name:
            raise ValueError("Type your name (or a nickname the teacher will recognise) first.")
        query = query if isinstance(query, str) and len(query) <= MAX_QUERY and QUERY.fullmatch(query) else ""
        return cls(student_id=check_student_id(student_id), name=name, answer=clean(answer, MAX_ANSWER, True),
                   checks=items(checks, HandInCheck), predictions=items(predictions, HandInPrediction),
                   query=query, metrics=_metrics(metrics))

    def link(self) -> str:
        """The state link, relative to /teacher or /app: the full lesson as the student left it."""
        return "app" + self.query

    def score(self, which: str) -> tuple[int, int]:
        """(right, judged) over 'checks' or 'predictions' (an item with right=None is not judged)."""
        judged = getattr(self, which)
        return sum(i.right is True for i in judged), sum(i.right is not None for i in judged)


def _merged_items(older: tuple[ItemT, ...], newer: tuple[ItemT, ...], key: Callable[[ItemT], tuple[str, str]],
                  said: Callable[[ItemT], str]) -> tuple[ItemT, ...]:
    """`older`'s items and then `newer`'s, one per question (`key(item)`): its newest item, a
    later one replacing an earlier one and moving to the end, so the list runs from the oldest
    answer to the newest; the newest MAX_ITEMS. An item that says nothing (`said(item)` empty)
    holds no answer: it is left out, and so never replaces one."""
    merged: dict[tuple[str, str], ItemT] = {}
    for item in (*older, *newer):
        if said(item):
            merged.pop(key(item), None)
            merged[key(item)] = item
    return tuple(merged.values())[-MAX_ITEMS:]


def prediction_key(p: HandInPrediction) -> tuple[str, str]:
    """A prediction's question: its node and its exact text (the text carries the state's numbers,
    so two states ask two questions), as the class pulse groups them."""
    return p.node, p.question


def check_key(c: HandInCheck) -> tuple[str, str]:
    """A self-check's question: its key (Explain it back keeps one answer per key), or its text
    for a check handed in without a key (an older format)."""
    return (c.key, "") if c.key else ("", c.question)


def merge(older: HandIn, newer: HandIn) -> HandIn:
    """What a student has handed in once `newer` arrives after `older` (the same student): nothing
    is lost. Predictions and self-checks: every question either answered, with the newest answer
    to each (an item with nothing said is left out), the newest MAX_ITEMS when there are more.
    The written answer and the name: the newer unless it is empty. The state link: the newer's
    (where the student last was; '' is the lesson's defaults). The metric cards: per node, the
    newer's (the newer's alone if together they would be too big). The times and the count are
    left to the storage (`older`'s creation time is kept)."""
    metrics = {**older.metrics, **newer.metrics}
    if len(compact(metrics)) > MAX_METRICS:
        metrics = newer.metrics or older.metrics
    return HandIn(student_id=newer.student_id, name=newer.name or older.name,
                  answer=newer.answer or older.answer,
                  checks=_merged_items(older.checks, newer.checks, check_key, lambda c: c.typed),
                  predictions=_merged_items(older.predictions, newer.predictions, prediction_key,
                                            lambda p: p.predicted),
                  query=newer.query, metrics=metrics, created_at=older.created_at)


def validate(h: HandIn) -> HandIn:
    """`h` if it is exactly what `HandIn.make` produces from its own fields, else ValueError."""
    if not isinstance(h, HandIn):
        raise ValueError("not a hand-in")
    again = HandIn.make(h.student_id, h.name, h.answer, h.checks, h.predictions, h.query, h.metrics)
    if (again.name, again.answer, again.checks, again.predictions, again.query, again.metrics) != (
            h.name, h.answer, tuple(h.checks), tuple(h.predictions), h.query, h.metrics):
        raise ValueError("a hand-in field is not clean text within its limit")
    return again


class RateLimit:
    """At most one hand-in every `gap_s` seconds and `most` in all, per browser session."""

    def __init__(self, gap_s: float = 3.0, most: int = 30, clock=time.monotonic):
        self.gap_s, self.most, self.clock = gap_s, most, clock
        self.count, self.last = 0, None

    def refusal(self) -> str | None:
        """None (and the hand-in is counted) when allowed now, else a sentence saying why not."""
        now = self.clock()
        if self.count >= self.most:
            return f"You have handed in {self.count} times from this page: reload it to hand in again."
        if self.last is not None and now - self.last < self.gap_s:
            return (
                f"Handed in a moment ago: wait {max(1, round(self.gap_s - (now - self.last)))} s and try "
                "again.")
        self.count, self.last = self.count + 1, now
        return None
