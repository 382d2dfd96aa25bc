"""The lesson is written in the project's own words: no run of 7 words of the reference lesson
(not part of the repository; `SEED` is where a copy lies beside the checkout) appears in the
project's texts. Skipped where there is no copy (a fresh clone)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT.parent / "shared" / "seed" / "kv-cache-lesson.txt"
RUN = 7
TEXTS = [*sorted((ROOT / "kvviz").rglob("*.py")), ROOT / "app.py", ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         ROOT / "assets" / "embed.html"]


def runs(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(words[i:i + RUN]) for i in range(len(words) - RUN + 1)}


def test_runs_finds_a_shared_phrase_whatever_the_case_and_punctuation():
    assert runs("One two, three FOUR five six seven!") & runs("one two three four five six seven")


@pytest.mark.skipif(not SEED.exists(), reason=f"the reference lesson is not at {SEED}")
def test_no_sentence_of_the_reference_lesson_is_copied():
    reference = runs(SEED.read_text(encoding="utf-8"))
    copied = {path.name: sorted(" ".join(r) for r in runs(path.read_text(encoding="utf-8")) & reference)[:3]
              for path in TEXTS}
    assert not {name: found for name, found in copied.items() if found}
