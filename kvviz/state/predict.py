"""Predict, then run: a node asks the student to commit to a prediction before its key action
(Free R2, Add request, Prefix sharing on); the engine's outcome then appears beside it.

A prediction locked in and waiting for the action is a frozen `PendingPrediction` (question,
predicted); once the action ran, it is a frozen `ResolvedPrediction` (node, question, predicted, outcome,
right, why); it becomes plain data only at a boundary (`to_json` for the explain-it-back download,
`from_json` to read one back, checked). `why` is the engine's own arithmetic for the state it
resolved in (each node's `NodeState.explain`), so a miss is answered, not just marked.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from kvviz import formatting as fmt

MAX_DIGITS = 4
MAX_TEXT = 1000  # characters of any one field of a resolved prediction read from JSON


@dataclass(frozen=True)
class Question:
    text: str  # static lesson text, formatted with numbers from the state (never user text)
    action: str  # the control that runs it, e.g. "Free R2"
    choices: tuple[str, ...] = ()  # empty: the answer is a whole number


# Said when a locked prediction's question changed before its key action (kvviz/state/node.py;
# the played page says the same: kvviz/export/player_predict.js).
CLEARED = (
    "The question changed, so your prediction ({predicted}) was cleared: read the new question and predict "
    "again.")


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


@dataclass(frozen=True)
class PendingPrediction:
    """A prediction locked in, waiting for the node's key action: the question as asked, and the
    student's answer as recorded (`read`)."""

    question: str
    predicted: str


@dataclass(frozen=True)
class ResolvedPrediction:
    """A prediction met by the engine: what was asked of which node, what the student predicted,
    what the engine did, whether they agree, and the engine's arithmetic for it (or '')."""

    node: str  # the node's key, e.g. "radix"
    question: str  # the question as it was asked (its numbers from the state then)
    predicted: str  # the student's answer, as recorded (`read`)
    outcome: str  # the engine's, in the same terms
    right: bool
    why: str = ""

    def to_json(self) -> dict:
        """Plain data: {node, question, predicted, outcome, right, why}."""
        return asdict(self)

    @classmethod
    def from_json(cls, data) -> ResolvedPrediction:
        """One read back from plain data; ValueError (a sentence naming the field) for anything
        that is not an object with these fields: text of at most MAX_TEXT characters, `right`
        true or false, `why` optional. Fields it does not know are refused too."""
        if not isinstance(data, dict):
            raise ValueError(f"A resolved prediction is a JSON object, not {type(data).__name__}.")
        known = {f.name for f in fields(cls)}
        if extra := sorted(str(k) for k in data if k not in known):
            raise ValueError(f"A resolved prediction has no field {', '.join(extra)}.")
        if missing := [name for name in known - {"why"} if name not in data]:
            raise ValueError(f"A resolved prediction needs its {', '.join(sorted(missing))}.")
        for name in ("node", "question", "predicted", "outcome", "why"):
            value = data.get(name, "")
            if not isinstance(value, str):
                raise ValueError(f"A resolved prediction's {name} must be text.")
            if len(value) > MAX_TEXT:
                raise ValueError(f"A resolved prediction's {name} is longer than {MAX_TEXT} characters.")
        if not isinstance(data.get("right"), bool):
            raise ValueError("A resolved prediction's right must be true or false.")
        return cls(**data)


def record(node: str, pending: PendingPrediction, outcome: str, why: str = "") -> ResolvedPrediction:
    """The pending prediction of `node` met by the engine's outcome."""
    return ResolvedPrediction(node=node, question=pending.question, predicted=pending.predicted,
                              outcome=outcome, right=pending.predicted == outcome, why=why)


def verdict(entry: ResolvedPrediction) -> str:
    """A resolved prediction beside the engine's outcome, and the engine's arithmetic for it."""
    said = f"You predicted {entry.predicted}; the engine: {entry.outcome}."
    why = entry.why
    if entry.right:
        return f"{said} Right: {why}" if why else f"{said} Right."
    return f"{said} Not this time: {why}" if why else f"{said} Not this time."
