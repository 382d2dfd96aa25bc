"""A component's JavaScript, kept in `.js` files beside its module (parsed by `node --check` in
the tests: tests/house/test_js_files.py), read once at import and joined in order."""

from __future__ import annotations

from pathlib import Path


def js_source(module_file: str, *names: str) -> str:
    """The files `names` (relative to `module_file`'s folder), joined by newlines."""
    here = Path(module_file).resolve().parent
    return "\n".join((here / name).read_text(encoding="utf-8") for name in names)
