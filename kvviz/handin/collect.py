"""A hand-in read from one session's lesson states (`Lesson.states`: node key -> state).

Reads what exists and nothing more, so it follows the explain node as it changes: the answer;
the self-checks (`responses`, `feedback` and the question texts in its module's `CHECKS`); the
predictions (`predictions`, on the explain state or on any node's state); each self-check and
prediction a `ResolvedPrediction` (kvviz/state/predict.py), handed in as a `HandInCheck` or a
`HandInPrediction`; the state link (every node's state in the URL) and the headline metric cards
of every live node, as the student saw them. The link and the node list
come from the page that composes the lesson (kvviz/lesson.py): nothing here reads the registry.
"""

from __future__ import annotations

from kvviz.handin.model import HandIn, HandInCheck, HandInPrediction
from kvviz.state.predict import ResolvedPrediction


def metrics(states: dict, live) -> dict:
    """{node key: {card label: card text, 'step': n}} for every node of `live` (the registry's
    nodes that run engines: each has a `key` and its `cards`)."""
    out = {}
    for n in live:
        state = states.get(n.key)
        if state is None:
            continue
        cards = {c.label: c.value(getattr(state, c.of).metrics) for c in n.cards}
        out[n.key] = {**cards, "step": str(getattr(state, "step_count", ""))}
    return out


def checks(explain) -> list[HandInCheck]:
    """The self-checks the student answered: the question as asked, what they said, the engine's
    answer, the verdict and whether it was right (explain it back keeps each as a
    `ResolvedPrediction`)."""
    responses = getattr(explain, "responses", None) or {}
    feedback = getattr(explain, "feedback", None) or {}
    return [HandInCheck.make(key=str(key), question=entry.question, typed=entry.predicted,
                             outcome=entry.outcome, feedback=str(feedback.get(key, "")),
                             right=entry.right is True)
            for key, entry in responses.items() if isinstance(entry, ResolvedPrediction)]


def predictions(states: dict) -> list[HandInPrediction]:
    """Every prediction made, from the explain state and from any node's state, each once (the
    self-checks, which explain it back also lists among its predictions, are in `checks`)."""
    explain = states.get("explain")
    answered = getattr(explain, "responses", None) or {}
    seen = {(e.node, e.question, e.predicted) for e in answered.values() if isinstance(e, ResolvedPrediction)}
    out = []
    for state in [states.get("explain"), *states.values()]:
        for p in getattr(state, "predictions", None) or ():
            if not isinstance(p, ResolvedPrediction):
                continue
            key = (p.node, p.question, p.predicted)
            if key not in seen:
                seen.add(key)
                out.append(HandInPrediction.make(node=p.node, question=p.question, predicted=p.predicted,
                                                 outcome=p.outcome, right=p.right))
    return out


def collect(states: dict, student_id: str, name: str, describe=None) -> HandIn:
    """The hand-in for these states (ValueError with a sentence for a bad id or an empty name);
    `describe(states)` -> (the lesson's link, its cards' texts) is the page's (Lesson.describe);
    without one the hand-in holds neither."""
    explain = states.get("explain")
    query, cards = describe(states) if describe is not None else ("", {})
    return HandIn.make(student_id=student_id, name=name, answer=getattr(explain, "answer", ""),
                       checks=checks(explain), predictions=predictions(states),
                       query=query, metrics=cards)
