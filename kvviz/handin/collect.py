"""A hand-in read from one session's lesson states (`Lesson.states`: node key -> state).

Reads what exists and nothing more, so it follows the explain node as it changes: the answer;
the self-checks (`responses`, `feedback` and the question texts in its module's `CHECKS`); the
predictions (`predictions`: plain dicts {node, question, predicted, outcome, right}, on the
explain state or on any node's state); the state link (every node's state in the URL) and the
headline metric cards of every live node, as the student saw them.
"""

from __future__ import annotations

import sys

from kvviz.handin.model import HandIn


def metrics(states: dict) -> dict:
    """{node key: {card label: card text, 'step': n}} for every live node."""
    from kvviz.nodes import LIVE

    out = {}
    for n in LIVE:
        state = states.get(n.key)
        if state is None:
            continue
        cards = {c.label: c.value(getattr(state, c.of).metrics) for c in n.cards}
        out[n.key] = {**cards, "step": str(getattr(state, "step_count", ""))}
    return out


def checks(explain) -> list[dict]:
    """The self-checks the student tried: what they typed, the verdict and whether it was right."""
    responses = getattr(explain, "responses", None) or {}
    feedback = getattr(explain, "feedback", None) or {}
    module = sys.modules.get(type(explain).__module__)
    questions = {getattr(c, "key", None): getattr(c, "question", "") for c in getattr(module, "CHECKS", ())}
    order = list(questions) + [k for k in responses if k not in questions]
    return [{"key": k, "question": questions.get(k) or k, "typed": responses[k], "feedback": feedback.get(k, ""),
             "right": str(feedback.get(k, "")).startswith("Right")}
            for k in order if k in responses]


def predictions(states: dict) -> list[dict]:
    """Every prediction made, from the explain state and from any node's state, each once."""
    seen, out = set(), []
    for state in [states.get("explain"), *states.values()]:
        for p in getattr(state, "predictions", None) or ():
            if not isinstance(p, dict):
                continue
            key = (p.get("node"), p.get("question"), p.get("predicted"))
            if key not in seen:
                seen.add(key)
                out.append(p)
    return out


def collect(states: dict, student_id: str, name: str) -> HandIn:
    """The hand-in for these states (ValueError with a sentence for a bad id or an empty name)."""
    from kvviz import urlstate

    explain = states.get("explain")
    return HandIn.make(student_id=student_id, name=name, answer=getattr(explain, "answer", ""),
                       checks=checks(explain), predictions=predictions(states),
                       query=urlstate.query(None, states), metrics=metrics(states))
