"""A resolved prediction (kvviz/state/predict.py's `ResolvedPrediction`) is a frozen value, read
by attribute inside the lesson and plain data only at its edges: `to_json` (the download's JSON)
and `from_json`, which refuses anything but the six fields, as text of a bounded length and a
true/false verdict, each with a sentence naming the field."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kvviz.state import predict
from kvviz.state.predict import MAX_TEXT, ResolvedPrediction

ENTRY = ResolvedPrediction(node="radix", question="How many blocks stored?", predicted="9", outcome="18",
                           right=False, why="6 shared + 4 × 3 own = 18")


def test_it_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        ENTRY.right = True  # type: ignore[misc]
    assert hash(ENTRY) == hash(dataclasses.replace(ENTRY))  # (a value: equal ones hash alike)


def test_it_round_trips_through_json():
    data = ENTRY.to_json()
    assert data == {"node": "radix", "question": "How many blocks stored?", "predicted": "9", "outcome": "18",
                    "right": False, "why": "6 shared + 4 × 3 own = 18"}
    assert list(data) == ["node", "question", "predicted", "outcome", "right", "why"]
    assert ResolvedPrediction.from_json(json.loads(json.dumps(data))) == ENTRY
    without_why = {k: v for k, v in data.items() if k != "why"}  # (the engine's arithmetic is optional)
    assert ResolvedPrediction.from_json(without_why) == dataclasses.replace(ENTRY, why="")


def test_record_resolves_a_pending_prediction():
    pending = predict.PendingPrediction("How many blocks stored?", "18")
    got = predict.record("radix", pending, "18", "why")
    assert got == ResolvedPrediction("radix", "How many blocks stored?", "18", "18", True, "why")
    assert predict.verdict(got) == "You predicted 18; the engine: 18. Right: why"
    assert predict.verdict(ENTRY) == (
        "You predicted 9; the engine: 18. Not this time: 6 shared + 4 × 3 own = 18")


def test_a_pending_prediction_is_frozen_and_a_node_holds_one_or_none():
    pending = predict.PendingPrediction("How many blocks stored?", "18")
    with pytest.raises(dataclasses.FrozenInstanceError):
        pending.predicted = "19"  # type: ignore[misc]
    from kvviz.state.node import NodeState

    assert NodeState.param["predicted"].default is None
    with pytest.raises(ValueError):
        NodeState(predicted={"question": "q", "predicted": "1"})  # a plain dict is refused


@pytest.mark.parametrize(("data", "says"), [
    ("not an object", "is a JSON object, not str"),
    ([1, 2], "is a JSON object, not list"),
    ({**ENTRY.to_json(), "extra": 1}, "has no field extra"),
    ({k: v for k, v in ENTRY.to_json().items() if k not in ("node", "outcome")}, "needs its node, outcome"),
    ({**ENTRY.to_json(), "predicted": 9}, "predicted must be text"),
    ({**ENTRY.to_json(), "why": None}, "why must be text"),
    ({**ENTRY.to_json(), "question": "x" * (MAX_TEXT + 1)}, f"question is longer than {MAX_TEXT} characters"),
    ({**ENTRY.to_json(), "right": "yes"}, "right must be true or false"),
    ({**ENTRY.to_json(), "right": None}, "right must be true or false"),
])
def test_bad_or_oversized_fields_are_refused_with_a_sentence(data, says):
    with pytest.raises(ValueError, match=says):
        ResolvedPrediction.from_json(data)


def test_a_field_at_its_limit_is_kept_whole():
    long = {**ENTRY.to_json(), "question": "x" * MAX_TEXT}
    assert ResolvedPrediction.from_json(long).question == "x" * MAX_TEXT
