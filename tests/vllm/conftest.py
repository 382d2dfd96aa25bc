"""The vLLM watcher (vllm_watch/) and node 04 over it; the tests that need a real vLLM use
tests/vllm_support.py.

Shared fixtures: tests/conftest.py; this room's own, here."""

from __future__ import annotations

import pytest
import vllm_support

from vllm_watch.monitor import Monitor


@pytest.fixture(scope="module")
def srv():
    return vllm_support.server()


@pytest.fixture(scope="module")
def watcher(srv):
    """A watcher subscribed before this module sends anything (it also replays what came before)."""
    mon = Monitor(vllm_support.endpoints(srv)).start()
    mon.wait_for(lambda s: s.status == "connected", timeout=30)
    yield mon
    mon.stop()
