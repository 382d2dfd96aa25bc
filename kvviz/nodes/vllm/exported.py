"""Node 04 in the static export (kvviz/export): the shipped vLLM recording, one snapshot per state.

The live node plays `assets/vllm-recording.json` through the watcher's own code when no vLLM
answers (shipped.py); the export records the same view at each of those
snapshots (`VllmState.show_recorded`), so its Replay button steps through them in the browser,
with the same figures, the status line saying it is a recording (vLLM's version and the date).
Sending questions needs a vLLM: those controls are hidden in recording mode, and disabled.
"""

from __future__ import annotations

from kvviz.nodes.recipe import Control, Effect, Recipe


def _end(state) -> None:
    state.show_recorded()


def recipe() -> Recipe:
    return Recipe(
        branches={"r": _end},
        default="r",
        controls=(Control("button", "do-replay", "replay"),),
        branch="r", actions={"replay": Effect(replay=True)},
        live_only=("in-question", "do-send", "do-send_four"),
    )
