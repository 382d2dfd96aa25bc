"""The URLs of the lesson's stylesheets (`assets/kvviz.css`, `assets/handin.css`), as Panel serves
them: the files that the checkout's `stylesheets.py` lists for Panel's own /components/ route,
so that `panel serve app.py` serves a styled page with no other flag. Relative to the page (/app,
/teacher); each carries its content's hash, so a browser never keeps an old copy.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROUTE = "components/stylesheets/Stylesheets/__css__/"  # (module stylesheets, class Stylesheets)
STYLESHEETS = ("assets/kvviz.css", "assets/handin.css")  # relative to ROOT, where stylesheets.py is


def url(relative: str) -> str:
    """The served URL of one of STYLESHEETS."""
    if relative not in STYLESHEETS:
        raise ValueError(f"{relative} is not one of the served stylesheets {STYLESHEETS}")
    digest = hashlib.sha256((ROOT / relative).read_bytes()).hexdigest()[:12]
    return f"{ROUTE}{relative}?v={digest}"
