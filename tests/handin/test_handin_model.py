"""A hand-in as data (kvviz/handin/model.py): what `HandIn.make` refuses, cleans and caps, the
handed-in self-checks and predictions, and a session's rate limit. No database: the storage's
own tests are tests/handin/test_handin_storage.py."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kvviz.handin import model
from kvviz.handin.model import (
    MAX_ANSWER,
    MAX_ITEMS,
    MAX_NAME,
    HandIn,
    HandInCheck,
    HandInPrediction,
    RateLimit,
)


def sid(i: int) -> str:
    return f"{i:032x}"


@pytest.mark.parametrize("bad",
                         ["", "A" * 32, "0" * 31, "0" * 33, "g" * 32, None, 5, "0" * 31 + "\n", "../" * 11])
def test_a_bad_student_id_is_refused(bad):
    with pytest.raises(ValueError, match="student id"):
        HandIn.make(bad, "Ada")


@pytest.mark.parametrize("name", ["", "   ", "\n\t", "\x00\x07", None, 42])
def test_an_empty_name_is_refused(name):
    with pytest.raises(ValueError, match="name"):
        HandIn.make(sid(1), name)


def test_text_is_cleaned_and_capped(hostile):
    h = HandIn.make(sid(1), "  Ada\x00\u202e  Lovelace\n" + "x" * 500, "a\r\nb\x1b[31m\tc" + "y" * 9000,
                    checks=[{"key": "k", "question": hostile, "typed": 3, "right": "yes"}] * (MAX_ITEMS + 5),
                    predictions=["not a dict",
                                 {"node": "radix", "question": "q", "predicted": "x" * 999, "right": True}])
    assert h.name.startswith("Ada Lovelace x") and len(h.name) == MAX_NAME
    assert h.answer.startswith("a\nb [31m c") and len(h.answer) == MAX_ANSWER
    assert len(h.checks) == MAX_ITEMS
    assert h.checks[0].to_json() == {"key": "k", "question": hostile, "typed": "", "outcome": "",
                                     "feedback": "", "right": None}
    assert len(h.predictions) == 1 and len(h.predictions[0].predicted) == model.MAX_SHORT


@pytest.mark.parametrize("query", ["javascript:alert(1)", "?a=1 onmouseover=x", '?a="><script>', "?a=1#frag",
                                   "//evil.example/?a=1", "?" + "a" * model.MAX_QUERY, 123])
def test_a_query_that_urlencode_would_not_write_is_dropped(query):
    assert HandIn.make(sid(1), "Ada", query=query).query == ""


def test_metrics_are_short_text_or_nothing():
    h = HandIn.make(sid(1), "Ada", metrics={"radix": {"SAVED": 50, "x" * 99: "y" * 999}, "bad": [1]})
    assert h.metrics == {"radix": {"SAVED": "", "x" * 40: "y" * 80}}
    big = {f"node{i}": {f"label{j}": "v" * 80 for j in range(20)} for i in range(20)}
    assert HandIn.make(sid(1), "Ada", metrics=big).metrics == {}
    assert HandIn.make(sid(1), "Ada", metrics="not a dict").metrics == {}


def test_handed_in_items_are_frozen_and_round_trip_through_json():
    check = HandInCheck.make(key="k", question="q?", typed="3", outcome="4", feedback="Not quite",
                             right=False)
    pred = HandInPrediction.make(node="radix", question="p?", predicted="9", outcome="18", right=None)
    for item in (check, pred):
        with pytest.raises(dataclasses.FrozenInstanceError):
            item.right = True  # type: ignore[misc]
        assert type(item).from_json(json.loads(json.dumps(item.to_json()))) == item
    assert list(check.to_json()) == ["key", "question", "typed", "outcome", "feedback", "right"]
    assert pred.to_json() == {"node": "radix", "question": "p?", "predicted": "9", "outcome": "18",
                              "right": None}


def test_handed_in_items_from_json_are_cleaned_and_capped_and_a_non_object_is_refused(hostile):
    got = HandInPrediction.from_json({"node": "radix\x00", "question": hostile, "predicted": "x" * 999,
                                      "outcome": 18, "right": "yes", "why": "not handed in", "cls": 1})
    assert got == HandInPrediction(node="radix", question=hostile, predicted="x" * model.MAX_SHORT,
                                   outcome="", right=None)
    for bad in ("a string", ["a", "list"], None, 3):
        with pytest.raises(ValueError, match="A handed-in self-check is a JSON object"):
            HandInCheck.from_json(bad)


def test_rate_limit_per_session():
    now = [0.0]
    limit = RateLimit(gap_s=3, most=3, clock=lambda: now[0])
    assert limit.refusal() is None
    assert "wait 3 s" in limit.refusal()
    now[0] = 2.2
    assert "wait 1 s" in limit.refusal()
    for t in (3.0, 6.0):
        now[0] = t
        assert limit.refusal() is None
    now[0] = 100.0
    assert "reload" in limit.refusal()
