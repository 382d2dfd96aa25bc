"""Predict, then run: a node asks the student to commit to a prediction before its key action
(Free R2, Add request, Prefix sharing on); the engine's outcome then appears beside it.

A resolved prediction is a plain dict, {node, question, predicted, outcome, right, why}, so it
can go into the explain-it-back download and be handed in. `why` is the engine's own arithmetic
for the state it resolved in (each node's `NodeState.explain`), so a miss is answered, not
just marked.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvviz import formatting as fmt

MAX_DIGITS = 4


@dataclass(frozen=True)
class Question:
    text: str  # static lesson text, formatted with numbers from the state (never user text)
    action: str  # the control that runs it, e.g. "Free R2"
    choices: tuple[str, ...] = ()  # empty: the answer is a whole number


def read(question: Question, typed: str) -> tuple[str | None, str]:
    """(the prediction as recorded, '') or (None, why it cannot be taken)."""
    typed = typed.strip()
    if question.choices:
        if typed in question.choices:
            return typed, ""
        return None, f"Choose one of: {', '.join(question.choices)}."
    number = fmt.whole_number(typed, MAX_DIGITS)
    if number is None or number < 0:
        return None, f"Type a whole number (up to {MAX_DIGITS} digits), then lock it in."
    return str(number), ""


def record(node: str, pending: dict, outcome: str, why: str = "") -> dict:
    return {"node": node, "question": pending["question"], "predicted": pending["predicted"],
            "outcome": outcome, "right": pending["predicted"] == outcome, "why": why}


def verdict(entry: dict) -> str:
    """A resolved prediction beside the engine's outcome, and the engine's arithmetic for it."""
    said = f"You predicted {entry['predicted']}; the engine: {entry['outcome']}."
    why = entry.get("why", "")
    if entry["right"]:
        return f"{said} Right: {why}" if why else f"{said} Right."
    return f"{said} Not this time: {why}" if why else f"{said} Not this time."
