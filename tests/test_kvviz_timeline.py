"""The timeline's checkpoints: stepping back through them gives exactly the state a replay from
the start gives."""

from __future__ import annotations

import dataclasses

import torch

from kvviz import timeline as timeline_module
from kvviz.scenarios import Radix

torch.set_num_threads(1)


def comparable(snap):
    return dataclasses.replace(snap, metrics=dataclasses.replace(snap.metrics, prefill_seconds=0.0))


def test_step_back_across_checkpoints_matches_a_replay_from_the_start(monkeypatch):
    monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 8)
    radix = Radix(prefix_sharing=True)
    t = radix.timeline
    t.release(1)
    radix.ask("What is a block?")
    assert len(t._checkpoints) >= 4  # checkpoints are in use
    for _ in range(12):
        assert t.step_back()
        reference = Radix(prefix_sharing=True, run=False).timeline
        monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 10**9)
        reference.replay(list(t.ops))
        monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 8)
        assert comparable(t.snapshot()) == comparable(reference.snapshot())


def test_replay_of_a_different_history_ignores_checkpoints_that_do_not_match(monkeypatch):
    monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 8)
    radix = Radix(prefix_sharing=False)
    t = radix.timeline
    assert t._checkpoints
    t.replay(t.ops[:2])  # two adds: shorter than every checkpoint
    assert t._checkpoints == []
    assert [r.status for r in t.snapshot().requests] == ["waiting", "waiting"]
