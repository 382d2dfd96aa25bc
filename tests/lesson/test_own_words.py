"""The lesson is written in the project's own words: no run of 7 words of the reference lesson
appears in the project's texts.

The reference lesson is not part of the repository. What the check needs of it is carried in
`fixtures/reference_runs.txt`: a fingerprint (blake2b, 64 bits) of each of its 7-word runs, no
text. Where a copy lies beside the checkout (`SEED`), a further test keeps the fingerprints true
to it; run this file as a script to write them again."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT.parent / "shared" / "seed" / "kv-cache-lesson.txt"
FINGERPRINTS = Path(__file__).resolve().parents[1] / "fixtures" / "reference_runs.txt"
HEADER = ("# blake2b-64 of every run of 7 words of the reference lesson "
          "(../shared/seed/kv-cache-lesson.txt);\n"
          "# fingerprints only, so the repository carries no sentence of it. "
          "Regenerate: python tests/lesson/test_own_words.py\n")
RUN = 7
TEXTS = [*sorted((ROOT / "kvviz").rglob("*.py")), ROOT / "app.py", ROOT / "teacher.py", ROOT / "README.md",
         *sorted((ROOT / "docs").glob("*.md")), ROOT / "assets" / "embed.html"]


def runs(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {" ".join(words[i:i + RUN]) for i in range(len(words) - RUN + 1)}


def fingerprint(run: str) -> str:
    return hashlib.blake2b(run.encode(), digest_size=8).hexdigest()


def fingerprints(text: str) -> list[str]:
    return sorted({fingerprint(r) for r in runs(text)})


def carried() -> set[str]:
    return {line for line in FINGERPRINTS.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")}


def test_runs_finds_a_shared_phrase_whatever_the_case_and_punctuation():
    assert runs("One two, three FOUR five six seven!") & runs("one two three four five six seven")


def test_the_check_finds_a_copied_run():
    """The fingerprints are of the reference's runs: a sentence of it (as the closing lines had once)
    is found, the project's own rewording of it is not."""
    copied = (
        "Paging and prefix sharing fit more requests into the cache, but every number in it still takes real "
        "bytes.")
    own = (
        "Paging and prefix sharing fit more requests into the cache, yet each key and value stored there "
        "still costs bytes.")
    assert {fingerprint(r) for r in runs(copied)} & carried()
    assert not {fingerprint(r) for r in runs(own)} & carried()


def test_no_sentence_of_the_reference_lesson_is_copied():
    reference = carried()
    assert len(reference) > 500
    copied = {path.relative_to(ROOT).as_posix(): sorted(r for r in runs(path.read_text(encoding="utf-8"))
                                                        if fingerprint(r) in reference)[:3]
              for path in TEXTS}
    assert not {name: found for name, found in copied.items() if found}


@pytest.mark.skipif(not SEED.exists(),
                    reason=f"no copy of the reference lesson at {SEED} to check the fingerprints against")
def test_the_fingerprints_are_the_reference_lessons():
    assert carried() == set(fingerprints(SEED.read_text(encoding="utf-8")))


if __name__ == "__main__":
    FINGERPRINTS.write_text(HEADER + "\n".join(fingerprints(SEED.read_text(encoding="utf-8"))) + "\n",
                            encoding="utf-8")
