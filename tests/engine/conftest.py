"""The engine: its allocators, block pool, scheduler, prefix cache, snapshots and backends, and the
trained model (engine/, tools/train.py, tools/hf_export.py).

Shared fixtures: tests/conftest.py; this room's own, here."""

from __future__ import annotations

import pytest

from engine import Engine


def run_until_idle(engine: Engine, max_steps: int = 1000) -> int:
    """Step until nothing is waiting or running, or until a step can do nothing (a waiting request
    needs blocks that finished requests hold); returns the number of steps that ran. Fails rather
    than loop forever if the engine keeps stepping without finishing."""
    for n in range(max_steps):
        if not engine.has_unfinished() or not engine.step():
            return n
    raise AssertionError(f"engine still busy after {max_steps} steps")


def serve(engine: Engine, prompts, max_new_tokens: int, max_steps: int = 2000) -> list[int]:
    """Engine.generate with a step bound: add the prompts, step, release each request as it
    finishes (so a full pool drains). Returns the request ids; fails rather than loop forever."""
    ids = [engine.add_request(p, max_new_tokens) for p in prompts]
    pending = set(ids)
    for _ in range(max_steps):
        for rid in sorted(pending):
            if engine.requests[rid].status.value == "finished":
                engine.release(rid)
            if engine.requests[rid].status.value in ("released", "refused"):
                pending.discard(rid)
        if not pending:
            return ids
        engine.step()
    raise AssertionError(f"requests {sorted(pending)} unfinished after {max_steps} steps")


@pytest.fixture
def drain():
    """drain(engine, max_steps=1000): step until idle; returns the number of steps."""
    return run_until_idle


@pytest.fixture
def serve_all():
    """serve_all(engine, prompts, max_new_tokens): see serve."""
    return serve
