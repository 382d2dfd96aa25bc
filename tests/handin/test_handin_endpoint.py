"""A hand-in in one request (kvviz/handin/endpoint.py): what the recorded lesson sends, checked as
the live boxes' hand-ins are, on both stores (the `class_db` fixture)."""

from __future__ import annotations

import json

import pytest

from kvviz.handin import endpoint
from kvviz.handin.storage import Store

HOSTILE = "<img src=x onerror=alert(1)>"
ID = "0123456789abcdef" * 2


@pytest.fixture
def db(class_db, monkeypatch):
    monkeypatch.setenv("KVVIZ_DB", class_db)
    endpoint._LIMITS.clear()
    return Store(class_db)


def body(**fields) -> bytes:
    return json.dumps({"student_id": ID, "name": "Ada", "predictions": [], "query": "?sharing=1",
                       **fields}).encode()


def test_a_hand_in_is_stored_once_cleaned_and_confirmed(db):
    predictions = [{"node": "radix", "question": "How many blocks?", "predicted": "9", "outcome": "18",
                    "right": False, "why": "6 shared + 4 × 3 own = 18", "recorded": True}]
    status, answer = endpoint.hand_in(body(name=HOSTILE + " " * 3, predictions=predictions))
    assert status == 200 and answer["ok"] and "Your teacher can see it now" in answer["message"]
    [stored] = db.handins()
    assert stored.name == HOSTILE and stored.query == "?sharing=1"  # (kept as text: escaped where shown)
    assert stored.predictions[0].predicted == "9" and stored.predictions[0].right is False
    assert "why" not in stored.predictions[0].to_json()


@pytest.mark.parametrize("raw, why", [
    (b"{not json", "could not be read"), (b"[1, 2]", "could not be read"), (b"\xff\xfe", "could not be read"),
    (body(name="   "), "Type your name"), (body(student_id="../../etc"), ""),
])
def test_bad_requests_are_refused_with_a_sentence_and_store_nothing(db, raw, why):
    status, answer = endpoint.hand_in(raw)
    assert status == 400 and not answer["ok"] and why in answer["message"] and answer["message"]
    assert db.handins() == []


def test_a_huge_body_is_refused_and_a_bad_query_is_dropped(db):
    assert endpoint.hand_in(b"x" * (endpoint.MAX_BODY + 1))[0] == 413
    status, _answer = endpoint.hand_in(body(query="?a=<script>"))
    assert status == 200 and db.handins()[0].query == ""


def test_one_student_is_rate_limited(db):
    assert endpoint.hand_in(body())[0] == 200
    status, answer = endpoint.hand_in(body())
    assert status == 429 and not answer["ok"]
    assert db.handins()[0].submissions == 1
