"""Explain it back's self-checks (kvviz/nodes/explain/checks.py): an answer is a real engine run,
made once per node set-up and settings and then read back, equal to one made afresh."""

from __future__ import annotations

import pytest

from kvviz.nodes.explain import checks


@pytest.fixture
def nodes():
    import torch

    torch.set_num_threads(1)
    from kvviz.nodes.fragmentation.state import FragmentationState
    from kvviz.nodes.paging.state import PagingState
    from kvviz.nodes.radix.state import RadixState

    return FragmentationState(), PagingState(), RadixState()


def _fresh(remembered: list[checks.SelfCheck], nodes) -> dict[str, object]:
    """The checks' answers with nothing remembered."""
    for kept in (checks._gap_after_free_of, checks._empty_of, checks._stored_of):
        kept.cache_clear()
    return {c.key: c.answer(*nodes) for c in remembered}


def test_a_check_asked_again_with_the_same_settings_runs_no_engine_and_answers_the_same(nodes, monkeypatch):
    frag, _paging, radix = nodes
    remembered = [c for c in checks.CHECKS if c.key != "adds_before_refusal"]  # (node 02's copies its state)
    first = _fresh(remembered, nodes)
    runs: list[tuple] = []
    real = checks.new_scenario
    monkeypatch.setattr(checks, "new_scenario",
                        lambda kind, *args: (runs.append((kind, args)), real(kind, *args))[1])
    again = {c.key: c.answer(*nodes) for c in remembered}
    assert again == first and runs == []
    # another setting is another run: node 01's slabs of 10 blocks, node 03's sharing off and a question asked
    frag.reserve = 10
    radix.sharing = not radix.sharing
    changed = {c.key: c.answer(*nodes) for c in remembered}
    assert len(runs) == 3, runs
    assert changed == _fresh(remembered, nodes)
    assert changed != first
