"""The timeline: recorded operations, replay, and stepping back to an exact earlier state."""

from __future__ import annotations

import pytest

from engine import Engine
from kvviz import timeline as timeline_module
from kvviz.nodes.radix.scenario import RadixScenario
from kvviz.timeline import Op, Outcome, Timeline


@pytest.fixture
def timeline(make_config) -> Timeline:
    """A tight shared-prefix pool (8 blocks of 4 tokens): preemption and eviction happen."""
    return Timeline(make_config(block_size=4, num_blocks=8, prefix_sharing=True))


def test_step_back_reproduces_the_snapshot_before_the_last_step(timeline):
    for prompt in ("Page one", "Page two", "Page six"):
        timeline.add(prompt, 20)
    history = [timeline.snapshot()]
    for _ in range(8):
        timeline.step()
        history.append(timeline.snapshot())
    assert timeline.snapshot().metrics.preempted > 0
    for expected in reversed(history[:-1]):
        assert timeline.step_back()
        assert timeline.snapshot() == expected


def grow_history(timeline: Timeline, num_ops: int) -> list[tuple]:
    """Add a request every 4 steps, release requests as they finish, step; until `num_ops`
    operations are recorded. Returns (snapshot before, snapshot after) of each step."""
    prompts = ("Page one", "Page two", "Page six", "Page ten")
    steps = []
    while len(timeline.ops) < num_ops:
        for r in timeline.snapshot().requests:
            if r.status == "finished":
                timeline.release(r.request_id)
        if len(steps) % 4 == 0:
            timeline.add(prompts[len(steps) // 4 % len(prompts)], 10)
        before = timeline.snapshot()
        timeline.step()
        steps.append((before, timeline.snapshot()))
    m = timeline.snapshot().metrics
    assert m.preempted > 0 and m.evicted_blocks > 0 and m.decode_tokens > 0
    return steps


def test_step_back_through_a_long_history_and_forward_again_is_exact(timeline):
    """80+ operations: long enough for any replay shortcut (checkpoints) to be used. Each state
    is reached again exactly, going back, coming forward again, and going back again."""
    steps = grow_history(timeline, 80)
    for before, after in steps[::-1][:12]:
        assert timeline.step_back()
        assert timeline.snapshot() == before
        timeline.step()
        assert timeline.snapshot() == after
        assert timeline.step_back()
        assert timeline.snapshot() == before


def test_step_back_replays_releases(timeline):
    first = timeline.add("abcdefgh one", 2)
    timeline.run_until_idle()
    timeline.release(first)
    timeline.add("abcdefgh two", 4)
    timeline.step()
    before = timeline.snapshot()
    timeline.step()
    assert timeline.step_back()
    assert timeline.snapshot() == before
    assert before.request(first).status == "released"


def test_step_back_also_drops_what_came_after_the_last_step(timeline):
    timeline.add("first", 3)
    timeline.step()
    timeline.add("second", 3)
    timeline.step_back()
    assert [op.kind for op in timeline.ops] == ["add"]
    assert [r.name for r in timeline.snapshot().requests] == ["R1"]


def test_step_back_with_no_step_to_undo_changes_nothing(timeline):
    timeline.add("first", 3)
    assert timeline.step_back() is False
    assert timeline.ops == [Op("add", "first", 3)]


def test_failed_add_is_not_recorded(timeline):
    timeline.add("first", 3)
    timeline.step()
    before = (list(timeline.ops), timeline.snapshot())
    with pytest.raises(ValueError, match="empty"):
        timeline.add("", 3)
    with pytest.raises(ValueError, match="max_new_tokens"):
        timeline.add("fine", 0)
    assert (timeline.ops, timeline.snapshot()) == before


def test_failed_release_is_not_recorded(timeline):
    timeline.add("first", 3)
    ops = list(timeline.ops)
    with pytest.raises(KeyError, match="no request with id 7"):
        timeline.release(7)
    assert timeline.ops == ops


def test_a_failed_op_does_not_break_stepping_back(timeline):
    timeline.add("first", 5)
    timeline.step()
    before = timeline.snapshot()
    timeline.step()
    with pytest.raises(ValueError):
        timeline.add(b"\xff", 3)
    timeline.step_back()
    assert timeline.snapshot() == before


def test_step_when_idle_records_nothing(timeline):
    assert timeline.step() is False
    assert timeline.ops == []


def test_replaying_the_recorded_ops_elsewhere_gives_the_same_state(timeline):
    grow_history(timeline, 60)
    copy = Timeline(timeline.config)
    copy.replay(list(timeline.ops))
    assert copy.snapshot() == timeline.snapshot()
    assert copy.num_steps == timeline.num_steps > 0


def test_steps_before_counts_the_steps_between_adds_and_releases(timeline):
    timeline.add("Page one", 6)
    timeline.step()
    timeline.step()
    timeline.add("Page two", 6)
    timeline.run_until_idle()
    timeline.release(1)
    assert timeline.steps_before() == [0, 2, timeline.num_steps - 2]
    assert timeline.steps_before(skip=1) == [2, timeline.num_steps - 2]
    assert timeline.trailing_steps == 0
    timeline.add("Page six", 3)
    timeline.step()
    assert timeline.trailing_steps == 1


def test_step_to_replays_the_same_interleaving(timeline):
    timeline.add("Page one", 6)
    timeline.step()
    timeline.step()
    timeline.add("Page two", 6)
    timeline.run_until_idle()
    gaps = timeline.steps_before()
    replay = Timeline(timeline.config)
    for prompt, gap in zip(("Page one", "Page two"), gaps, strict=True):
        replay.step_to(gap)
        replay.add(prompt, 6)
    replay.run_until_idle()
    assert replay.snapshot() == timeline.snapshot()


def test_step_to_refuses_a_count_it_cannot_reach(timeline):
    timeline.add("Page one", 2)
    timeline.step()
    with pytest.raises(ValueError, match="already taken"):
        timeline.step_to(0)
    with pytest.raises(ValueError, match="ran out of work"):
        timeline.step_to(500)


# -- checkpoints, on the lesson's node 03 pool (the trained model) ---------------------------
def test_step_back_across_checkpoints_matches_a_replay_from_the_start(monkeypatch):
    monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 8)
    radix = RadixScenario(prefix_sharing=True)
    t = radix.timeline
    t.release(1)
    radix.ask("What is a block?")
    assert len(t._checkpoints) >= 4  # checkpoints are in use
    for _ in range(12):
        assert t.step_back()
        reference = Timeline(radix.timeline.config)
        monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 10**9)
        reference.replay(list(t.ops))
        monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 8)
        assert t.snapshot() == reference.snapshot()


def test_replay_of_a_different_history_ignores_checkpoints_that_do_not_match(monkeypatch):
    monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 8)
    radix = RadixScenario(prefix_sharing=False)
    t = radix.timeline
    assert t._checkpoints
    t.replay(t.ops[:2])  # two adds: shorter than every checkpoint
    _ = t.engine  # (the engine is made again lazily: only then are checkpoints looked at)
    assert t._checkpoints == []
    assert [r.status for r in t.snapshot().requests] == ["waiting", "waiting"]


# -- the process-wide memo: shared results, never shared engines -------------------------------
def play(timeline: Timeline) -> list:
    snaps = [timeline.snapshot()]
    while timeline.step():
        snaps.append(timeline.snapshot())
    return snaps


def test_a_second_timeline_on_the_same_path_reads_the_memo_and_runs_no_model(make_config, fresh_memo,
                                                                             monkeypatch):
    config = make_config(block_size=4, num_blocks=16, prefix_sharing=True)
    first = Timeline(config)
    for prompt in ("Page one", "Page two"):
        first.add(prompt, 12)
    expected = play(first)
    calls = []
    # any engine step would show here
    monkeypatch.setattr(Engine, "step", lambda self: calls.append(1) or True)
    second = Timeline(config)
    for prompt in ("Page one", "Page two"):
        second.add(prompt, 12)
    assert play(second) == expected and calls == []
    assert fresh_memo.hits > 0


def test_results_from_the_memo_equal_the_engine_run_from_scratch(make_config, fresh_memo):
    config = make_config(block_size=4, num_blocks=8, prefix_sharing=True)

    def session() -> list:
        t = Timeline(config)
        for prompt in ("Page one", "Page two", "Page six"):
            t.add(prompt, 20)
        snaps = play(t)
        t.release(1)
        t.add("Page one again", 6)
        snaps += play(t)
        while t.step_back():
            snaps.append(t.snapshot())
        return snaps

    shared = [session(), session()]  # the second reads the first's results
    fresh_memo.clear()
    alone = session()
    assert shared[0] == shared[1] == alone


def test_a_timeline_behind_its_memo_catches_up_when_it_leaves_the_shared_path(make_config):
    config = make_config(block_size=4, num_blocks=16)
    a, b = Timeline(config), Timeline(config)
    for t in (a, b):
        t.add("Shared start", 10)
        t.run_until_idle()
    b.add("Only b asks this", 6)  # not in the memo: b's engine runs from where the memo left it
    b.run_until_idle()
    reference = Timeline(config)
    reference.replay(list(b.ops))
    assert b.snapshot() == reference.engine.snapshot()


def test_the_memo_is_bounded(make_config):
    from kvviz.timeline import Memo

    memo = Memo(capacity=3)
    for k in range(5):
        memo.put((k,), Outcome(k, False))
    assert len(memo) == 3 and memo.get((0,)) is None and memo.get((4,)).result == 4


def test_stepping_back_over_remembered_states_runs_no_engine():
    """With each state's snapshot kept on the way (eager_snapshots), every step back reads the
    memo: the engine is not made again (the static recording walks thousands of states so)."""
    from kvviz.timeline import eager_snapshots

    radix = RadixScenario(prefix_sharing=False)
    t = radix.timeline
    with eager_snapshots():
        radix.ask("What is a block?")
    seen = []
    while t.step_back():
        assert t._engine is None  # (read from the memo)
        seen.append(t.snapshot())
    reference = Timeline(t.config)
    reference.replay(list(t.ops))
    assert seen[-1] == reference.engine.snapshot()  # (computed, not read from the memo)


def test_a_fork_copies_no_engine_until_it_runs_one_and_then_behaves_as_a_clone(make_config, fresh_memo):
    """`fork` (a scenario prototype's copies, kvviz/nodes/scenario_base.py): no engine copied
    while the memo answers; a new operation clones the prototype's engine then, and every state
    after equals a clone's (and the prototype's engine is not run)."""
    config = make_config(block_size=4, num_blocks=16, prefix_sharing=True)
    prototype = Timeline(config)
    for prompt in ("Page one", "Page two"):
        prototype.add(prompt, 12)
    prototype.run_until_idle()
    engine, before = prototype._engine, prototype.snapshot()
    fork, clone = prototype.fork(), prototype.clone()
    assert fork._engine is None and fork.snapshot() == before and not fork.has_work
    for t in (fork, clone):
        t.release(1)
        t.add("Page one again", 6)
    assert fork._engine is not None and fork._engine is not engine
    assert play(fork) == play(clone)
    while fork.step_back() and clone.step_back():
        assert fork.snapshot() == clone.snapshot()
    assert prototype._engine is engine and engine.snapshot() == before


def test_a_new_scenario_copies_its_prototype_s_engine_only_when_it_runs_one():
    from kvviz.nodes.scenario_base import new_scenario

    first, second = new_scenario(RadixScenario, True), new_scenario(RadixScenario, True)
    assert first.timeline._engine is None and second.timeline._engine is None
    assert first.snapshot() == second.snapshot()
    first.ask("What is a fork?")
    second.ask("What is a fork?")
    assert first.timeline._engine is not second.timeline._engine
    assert first.snapshot() == second.snapshot()


def test_keep_snapshots_makes_a_walk_back_s_missing_snapshots_in_one_run_forward(make_config, fresh_memo,
                                                                                 monkeypatch):
    """States reached without their snapshots (no eager_snapshots) are walked back through
    with no engine run once `keep_snapshots` made them, and they equal those made one by one."""
    monkeypatch.setattr(timeline_module, "CHECKPOINT_EVERY", 8)
    config = make_config(block_size=4, num_blocks=16, prefix_sharing=True)

    def history() -> Timeline:
        t = Timeline(config)
        for prompt in ("Page one", "Page two"):
            t.add(prompt, 12)
        t.run_until_idle()
        t.release(1)
        t.add("Page one again", 6)
        t.run_until_idle()
        return t

    expected = []
    t = history()
    while True:
        expected.append(t.snapshot())  # (each made again from a checkpoint)
        if not t.step_back():
            break
    fresh_memo.clear()
    t = history()
    steps = []
    monkeypatch.setattr(Engine, "step", lambda self, real=Engine.step: steps.append(1) or real(self))
    assert t.keep_snapshots() > 0
    ran = len(steps)
    assert ran == t.num_steps  # (one run forward, from the start: no checkpoint before the first)
    assert t.keep_snapshots() == 0
    seen = []
    while True:
        seen.append(t.snapshot())
        if not t.step_back():
            break
    assert len(steps) == ran and seen == expected


def test_keep_snapshots_from_a_step_leaves_the_states_before_it_alone(make_config, fresh_memo):
    config = make_config(block_size=4, num_blocks=16)
    t = Timeline(config)
    t.add("Page one", 12)
    t.run_until_idle()
    made = t.keep_snapshots(from_step=5)
    assert made == t.num_steps - 5 + 1  # (the states at 5 steps and more: the end, and before each step)
    while t.num_steps > 5:
        t.step_back()
        assert t._outcome().snapshot is not None
    t.step_back()
    assert t._outcome().snapshot is None
