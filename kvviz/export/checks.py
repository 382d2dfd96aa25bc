"""Explain it back on the played page: its self-checks answered from the engine's recorded outcomes.

A self-check asks about one node (kvviz/nodes/explain/checks.py), and its question and the
engine's answer depend only on the run that node shows (its branch), not on the step. So each is
computed here once per recorded branch, by the same code the live lesson runs (`ExplainState`),
and the page's player (checks.js) shows the question for the branch each node is at, takes the
student's answer, then the engine's. A state the student made live (a typed prompt) is asked of
the server in one request (kvviz/serve/live.py: `check`). The facts under the answer box are
each node's, at the end of the run it shows, with those an open check would give away withheld.
The sentences are the live lesson's (`SAY`, `withheld`: kvviz/export/page_models.py `facts_of`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bokeh.model import Model
from bokeh.models import CustomJS

from kvviz.export.page_models import asked_of, classes, facts_of
from kvviz.export.player import by_class
from kvviz.nodes.explain.checks import CHECKS
from kvviz.nodes.explain.state import FACT_NODE, SAY
from kvviz.nodes.recipe import Recipe

CHECKS_JS = Path(__file__).with_name("checks.js").read_text(encoding="utf-8")

# What only the played page says (the live lesson has an engine for every state).
PLAYED_SAY = {
    "facts_title": "What the nodes above show (each at the end of its run)",
    "live_node": "This node shows a run of your own: answer, and the server's engine checks it.",
    "unreachable": "The server could not answer this check right now; try again in a moment",
}

# The parts of Explain it back's view the played page drives, by their classes (kvviz/nodes/explain/view.py).
PARTS = ("kv-explain-facts", "kv-explain-answer", "kv-explain-predictions")


def meta(states: dict[str, Any] | None, plan: dict[str, Recipe],
         parts: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the player needs for Explain it back: every check (key, node, why, what it hides),
    and per node and recorded branch, the checks' questions and answers and the node's facts.
    `states`: a lesson's states with no view (each node is put in each of its branches; None: a
    new lesson's, if needed). `parts`: node -> `node_meta` of it, made already (each in the process
    that walks the node: kvviz/export/walk.py); the nodes not there are made here."""
    parts = dict(parts or {})
    if states is None and any(node not in parts for node in checked(plan)):
        from kvviz.lesson import Lesson

        states = Lesson({}).states
    asked: dict[str, dict[str, Any]] = {}
    facts: dict[str, dict[str, Any]] = {}
    for node in checked(plan):  # (in the checks' order: the same page every time)
        part = parts[node] if node in parts else node_meta(states or {}, node, plan[node])
        asked[node], facts[node] = part["asked"], part["facts"]
    return {"checks": [{"key": c.key, "node": c.node, "why": c.why, "hides": list(c.hides)} for c in CHECKS],
            "asked": asked, "facts": facts, "order": list(FACT_NODE), "fact_node": FACT_NODE,
            "defaults": {node: recipe.default for node, recipe in plan.items()},
            "say": {**SAY, **PLAYED_SAY}}


def checked(plan: dict[str, Recipe]) -> list[str]:
    """The nodes some self-check asks about and `plan` records, in the checks' order."""
    return [node for node in dict.fromkeys(c.node for c in CHECKS) if node in plan]


def node_meta(states: dict[str, Any], node: str, recipe: Recipe) -> dict[str, Any]:
    """One node's part of `meta`: per recorded branch, its checks' questions and answers and its
    facts. It depends on this node's state alone (each node's part can be made in another process:
    the one that walks it, whose engine runs the walk then finds made). The node is left at its
    recipe's default branch."""
    explain = states["explain"]
    asked: dict[str, Any] = {}
    facts: dict[str, Any] = {}
    for branch, setup in recipe.branches.items():
        setup(states[node])
        asked[branch] = asked_of(explain, node)
        facts[branch] = facts_of(explain, node)
    recipe.branches[recipe.default](states[node])
    return {"asked": asked, "facts": facts}


def wire(models: Iterable[Model]) -> dict[str, str]:
    """Attach Explain it back's controls among `models` (its view's) to the player (checks.js),
    each found by its class; hide what needs a session (its own hand-in box: the page's is
    below it; the Markdown download). Returns the ids of the parts the player writes."""
    ids: dict[str, str] = {}
    for c in CHECKS:
        ids[f"question-{c.key}"] = by_class(models, f"kv-check-question-{c.key}").id
        ids[f"feedback-{c.key}"] = by_class(models, f"kv-check-feedback-{c.key}").id
        box, button = by_class(models, f"kv-check-box-{c.key}"), by_class(models, f"kv-check-button-{c.key}")
        call = f"window.kvvizPlayer.checks.check({c.key!r}, "
        button.js_on_event("button_click",
                           CustomJS(args={"box": box}, code=call + "box.value_input || box.value)"))
        box.js_on_event("value_submit", CustomJS(code=call + "cb_obj.value)"))
    for part in PARTS:
        ids[part.removeprefix("kv-explain-")] = by_class(models, part).id
    for model in models:
        element: Any = model  # (one with classes is a widget's or a pane's model: it has `visible`)
        if {"kv-download", "kv-handin"} & set(classes(element)):
            element.visible = False
    return ids
