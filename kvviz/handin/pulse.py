"""The class pulse: for each prediction question, how many students predicted each value, and
what the engine did, so a teacher can show the class its own spread before revealing the answer.

Plain data, no HTML (pulse_html.py draws it). A question is a node's prediction or a self-check,
grouped by its node (or check) and its exact text (the text carries the state's numbers, so two
states ask two questions). Each student counts once per question: their latest answer to it (the
store keeps one hand-in per student, every later one merged in, one item per question: model.merge;
within a list, the last item of a question counts).
With `reveal` off nothing here depends on the engine's outcome (not the values, not their order,
not which are lumped together), so a hidden answer cannot be read off the chart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kvviz.handin.model import HandIn

MAX_BARS = 8  # the most common values each get a bar; the rest share one "other answers" bar


@dataclass(frozen=True)
class Bar:
    value: str  # as the first student to predict it typed it (or the engine's outcome)
    count: int  # students
    engine: bool = False  # the engine's outcome (only ever True when revealed)
    other: bool = False  # the "other answers" bar: `value` says how many distinct values


@dataclass
class Pulse:
    kind: str  # 'prediction' or 'check'
    node: str
    question: str
    students: int = 0
    bars: list[Bar] = field(default_factory=list)
    # (the engine's outcome, students), if revealed
    outcomes: list[tuple[str, int]] = field(default_factory=list)
    revealed: bool = False

    def sentence(self) -> str:
        """The chart as words: '12 predicted 9, 20 predicted 18 (the engine: 18)'."""
        said = ", ".join(f"{b.count} predicted {b.value}" if not b.other else f"{b.count} gave {b.value}"
                         for b in self.bars if b.count) or "nobody predicted yet"
        if not self.revealed:
            return f"{said} (the engine's answer is hidden)"
        if len(self.outcomes) == 1:
            return f"{said} (the engine: {self.outcomes[0][0]})"
        return f"{said} (the engine: " + ", ".join(f"{o} for {n}" for o, n in self.outcomes) + ")"


def norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _order(values: list[str]) -> list[str]:
    """Numbers ascending, then the other values alphabetically."""
    return sorted(values,
                  key=lambda v: (0, _number(v), v) if _number(v) is not None else (1, 0, v.casefold()))


def _items(h: HandIn):
    for p in h.predictions:
        yield "prediction", p.node, p.question, p.predicted, p.outcome
    for c in h.checks:
        yield "check", c.key, c.question, c.typed, c.outcome


def pulse(handins: list[HandIn], reveal: bool = False) -> list[Pulse]:
    """One Pulse per question, in first-seen order (handins as the store lists them)."""
    latest: dict[tuple, dict[str, tuple[str, str]]] = {}  # question -> student -> (predicted, outcome)
    for h in handins:
        for kind, node, question, said, outcome in _items(h):
            if said.strip():
                latest.setdefault((kind, node, question), {})[h.student_id] = (said, outcome)
    return [_one(kind, node, question, list(by_student.values()), reveal)
            for (kind, node, question), by_student in latest.items()]


def _one(kind: str, node: str, question: str, answers: list[tuple[str, str]], reveal: bool) -> Pulse:
    counts, shown = Counter(), {}
    for said, _outcome in answers:
        counts[norm(said)] += 1
        shown.setdefault(norm(said), said)
    top = [k for k, _n in sorted(counts.items(), key=lambda kn: (-kn[1], kn[0]))[:MAX_BARS]]
    rest = [k for k in counts if k not in top]
    engine: Counter = Counter()
    if reveal:
        for _said, outcome in answers:
            if outcome.strip():
                engine[norm(outcome)] += 1
                shown.setdefault(norm(outcome), outcome)
        for k in engine:  # the engine's outcome always has its own bar, even if nobody predicted it
            if k not in top:
                top.append(k)
                if k in rest:
                    rest.remove(k)
    keys = {shown[k]: k for k in top}
    bars = [Bar(v, counts[keys[v]], engine=keys[v] in engine) for v in _order(list(keys))]
    if rest:
        bars.append(Bar(f"{len(rest)} other answers", sum(counts[k] for k in rest), other=True))
    outcomes = [(shown[k], n) for k, n in engine.most_common()]
    return Pulse(kind, node, question, students=len(answers), bars=bars, outcomes=outcomes, revealed=reveal)
