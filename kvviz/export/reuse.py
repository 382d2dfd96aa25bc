"""What a served recording made, read back so that a static export of the same code reuses it.

A served recording (kvviz/export/cache.py) walks every node's states and answers Explain it back's
self-checks; its pages hold both (each node's `register` call, the `checks.setup` call) and
frames.json holds where each recorded property sits. A static export of the same code (the
tests' site, a notebook's node) reads them back here rather than run the engine again.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kvviz.export.page_models import FRAMES_FILE
from kvviz.export.record import Recording

# The calls a page makes to its player (kvviz/export/page.py `Page.finish`), found again here.
REGISTER = "window.kvvizPlayer.register("  # (a node: its recording, meta, ids, default branch)
CHECKS_SETUP = "window.kvvizPlayer.checks.setup("  # (Explain it back's self-checks)


@dataclass
class Walked:
    """A node's recording as one page made it, its properties named by place in `model_order`
    (`placed`), and its predictions (served pages): another page of the same export that holds
    the node's view (the same models in the same order, from the same default state) reuses it
    rather than walk the node's states again."""

    rec: Recording
    placed: list[list[Any]]  # [place in model_order, property name] for each of rec.props
    predict: dict[str, Any] | None

    def placed_in(self, order: Sequence[str]) -> Recording:
        """The recording with its properties on the models `order` (another page's, by place)."""
        return replace(self.rec, props=[[order[place], attr] for place, attr in self.placed])


def walks(folder: Path) -> dict[str, Walked]:
    """The walks a served recording made (kvviz/export/cache.py: its `folder`), read back from its
    node pages and frames.json: a static export of the same code reuses them (`export(walked=)`)."""
    decode = json.JSONDecoder().raw_decode
    out: dict[str, Walked] = {}
    frames = json.loads((folder / FRAMES_FILE).read_text(encoding="utf-8"))
    for key, placed in frames.items():
        text = (folder / f"{key}.html").read_text(encoding="utf-8")
        start = f"{REGISTER}{json.dumps(key)}, "
        packed, at = decode(text, text.index(start) + len(start))
        meta, _at = decode(text, at + len(", "))
        rec = Recording(**json.loads(gzip.decompress(base64.b64decode(packed))))
        out[key] = Walked(rec, placed, meta.get("predict"))
    return out


def recorded_checks(folder: Path) -> dict[str, Any]:
    """Explain it back's self-checks as a served recording (kvviz/export/cache.py: its `folder`)
    answered them, read back from its index.html: a static export of the same code reuses them
    (`export(explained=)`) rather than run every branch's engine again (`checks.meta`)."""
    text = (folder / "index.html").read_text(encoding="utf-8")
    found, _at = json.JSONDecoder().raw_decode(text, text.rindex(CHECKS_SETUP) + len(CHECKS_SETUP))
    if not isinstance(found, dict):
        raise ValueError(f"{folder / 'index.html'}: no self-checks in its call to {CHECKS_SETUP}")
    return found
