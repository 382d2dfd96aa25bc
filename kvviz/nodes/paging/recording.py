"""Node 02 in the static export (kvviz/export): the default stream's next requests, one Add each."""

from __future__ import annotations

from kvviz.nodes.paging import text
from kvviz.nodes.recipe import TRANSPORT, Control, Recipe, fresh

ADDS = 8  # the recording holds this many Add requests of the default stream

CONTROLLER = """{
  add(n) {
    if (n.adds >= n.meta.adds) return;
    const before = n.rec.steps[`a${n.adds}`].at(-1);
    n.adds += 1;
    const key = `a${n.adds}`, steps = n.rec.steps[key];
    const first = steps.findIndex((s) => s > before);  // the new request's first step, as live
    n.go(key, first < 0 ? steps.length - 1 : first);
    n.play(true);
  },
  reset(n) { n.adds = 0; n.go("a0"); },
  restore(n, branch) { n.adds = Number(branch.slice(1)); },
}"""


def _branch(adds: int):
    def setup(state) -> None:
        fresh(state)
        for _ in range(adds):
            state.add_request(settle=True)
    return setup


def recipe() -> Recipe:
    return Recipe(
        branches={f"a{k}": _branch(k) for k in range(ADDS + 1)},
        default="a0",
        controls=(Control("button", "Add request", "add"), Control("button", "Reset", "reset"), *TRANSPORT),
        controller=CONTROLLER,
        live_only=(text.PROMPT_LABEL, "Block table of"),
        meta={"adds": ADDS, "typed": {"param": "add", "prefix": "", "drop": ["add_gap"]}},
        keys={f"a{k + 1}": (f"a{k}", lambda s: s.add_request(settle=True)) for k in range(ADDS)},
    )
