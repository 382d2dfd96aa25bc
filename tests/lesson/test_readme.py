"""The README is the teacher's page: at most 250 lines, the teacher's sections first, its links
there, its commands real, and every number it tells the teacher to expect the engine's own
(computed here from the nodes' states, as the lesson computes them)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTIONS = re.findall(r"^## (.+)$", README, flags=re.M)


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def test_it_is_one_page():
    assert len(README.splitlines()) <= 250


def test_the_teachers_sections_come_first_and_the_engineers_get_one_section_of_links():
    assert SECTIONS[:3] == ["Start it", "Running it for a class", "Teach it"]
    for title in ("Embedding it in a course page", "System requirements", "Troubleshooting"):
        assert SECTIONS.index(title) < SECTIONS.index("For engineers")
    links = re.findall(r"\]\((docs/[^)]+)\)", section("For engineers"))
    assert {"docs/install.md", "docs/engine.md", "docs/vllm.md", "docs/benchmarks.md",
            "docs/testing.md"} <= set(links)


def test_every_local_link_and_picture_exists():
    for target in re.findall(r"\]\(([^)#]+)\)", README) + re.findall(r'<img src="([^"]+)"', README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
    for doc in (ROOT / "docs").glob("*.md"):
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#]+)\)", text) + re.findall(r'<img src="([^"]+)"', text):
            if not target.startswith("http"):
                assert (doc.parent / target).exists(), f"{doc.name}: {target}"


def test_the_commands_it_gives_exist():
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"`make (\w+)", README):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
    for variable in ("ADDRESS", "ALLOW", "PORT"):
        assert f"make lesson {variable}=" in README or f"{variable}=" in README
    done = subprocess.run([sys.executable, "-m", "kvviz", "lesson", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    for option in re.findall(r"kvviz lesson (--\w+)", README):
        assert option in done.stdout, option
    assert "python -m kvviz.handin.key" in README and (ROOT / "kvviz" / "handin" / "key.py").is_file()


@pytest.fixture(scope="module")
def engine_answers() -> dict[str, object]:
    """The predictions' and self-checks' answers at the nodes' defaults, from the engine."""
    import torch

    torch.set_num_threads(1)
    from kvviz.nodes.explain.checks import (
        _admitted_before_refusal,
        _empty_with_other_reserve,
        _gap_after_free,
    )
    from kvviz.nodes.fragmentation.state import FragmentationState
    from kvviz.nodes.paging.state import PagingState
    from kvviz.nodes.radix.state import RadixState

    frag, paging, radix = FragmentationState(), PagingState(), RadixState()
    answers: dict[str, object] = {
        "frag_question": frag.question().text, "paging_question": paging.question().text,
        "radix_question": radix.question().text, "gap_after_free": _gap_after_free(frag, paging, radix),
        "empty_at_10": _empty_with_other_reserve(frag, paging, radix),
        "adds_before_refusal": _admitted_before_refusal(frag, paging, radix),
        "in_use": (frag.scenario.snapshot().metrics.blocks_with_tokens,
                   frag.scenario.snapshot().metrics.blocks_reserved_empty),
    }
    scenario = paging.scenario  # (as node 02 runs: each request to its end, then the next added)
    scenario.run_until_idle()
    opening = (scenario.contiguous.snapshot().metrics.utilisation,
               scenario.paged.snapshot().metrics.utilisation)
    free = []
    for _ in range(4):
        free.append(scenario.contiguous.snapshot().metrics.blocks_free)
        scenario.add(*scenario.next_request())
        scenario.run_until_idle()
    c, p = scenario.contiguous.snapshot().metrics, scenario.paged.snapshot().metrics
    answers["paging"] = (opening, free, c.rejected, round(c.utilisation, 2), round(p.utilisation, 2),
                         p.rejected)
    frag.free_r2()
    m = frag.scenario.snapshot().metrics
    answers["frag_outcome"], answers["frag_free"], answers["frag_gap"] = (frag.outcome(), m.blocks_free,
                                                                          m.largest_free_run)
    radix.sharing = True
    answers["radix_outcome"], answers["radix_why"] = radix.outcome(), radix.explain()
    return answers


def test_the_three_predictions_are_the_lessons_with_the_engines_answers(engine_answers):
    teach = section("Teach it")
    a = engine_answers
    assert "8-block slabs" in a["frag_question"] and "12 blocks in a row" in a["frag_question"]
    assert a["frag_outcome"] == "refused" and (a["frag_free"], a["frag_gap"]) == (16, 8)
    assert "The engine: **refused**. 16 blocks are free, but as two separate\nholes of 8" in teach
    assert a["in_use"] == (12, 12) and "IN USE reads 12 / 32 and RESERVED · EMPTY 12" in teach
    assert "has 20 free blocks" in a["paging_question"] and "6-block slab" in a["paging_question"]
    assert "With 20, 14 and 8 free: **admitted**. After three adds, 2 are free" in teach
    opening, free, rejected, contiguous, paged, paged_rejected = a["paging"]
    assert (round(opening[0], 2), round(opening[1], 2)) == (0.67, 0.89) and (
        "CONTIGUOUS reads 67% full and PAGED 89%" in teach)
    assert free == [20, 14, 8, 2] and rejected == 1 and paged_rejected == 0
    assert (contiguous, paged) == (0.43, 0.92) and "reads only 43% full" in teach and "(92% full)" in teach
    assert "36 blocks" in a["radix_question"] and a["radix_outcome"] == "18"
    assert "6 shared + 4 × 3 own = 18" in a["radix_why"]
    assert "**18** = 6 shared +\n4 × 3 own" in teach


def test_the_self_check_answers_are_the_engines(engine_answers):
    teach = section("Teach it")
    assert engine_answers["gap_after_free"] == 8 and "LARGEST GAP **8**" in teach
    assert engine_answers["empty_at_10"] == 18 and "**18** blocks reserved but empty" in teach
    assert engine_answers["adds_before_refusal"] == 3 and "before refusing →\n**3**" in teach
