"""Node 04 in Chromium when the vLLM it watches goes and comes back: the status says disconnected
(and that a recording is shown meanwhile), then connected again, and the cache it draws is the new
server's (empty), not the old one's. Against a stand-in for vLLM (tests/vllm_standin_support.py:
what a real vLLM answered and published), so no vLLM is needed: how the page follows a server
does not depend on which server it is, and a real vLLM takes a minute to start again
(tests/ui/test_vllm_node.py has the real one)."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect
from vllm_standin_support import FRAMES, StandIn

from tools.browser import Server

pytestmark = pytest.mark.ui


def test_a_killed_server_shows_as_disconnected_then_reconnects_with_an_empty_cache(page, tmp_path):
    first = StandIn(tmp_path)
    for i in range(len(FRAMES)):
        first.publish(i)  # (the blocks of three requests sharing a prefix: a trunk)
    env = {"KVVIZ_VLLM_URL": first.endpoints.url, "KVVIZ_VLLM_EVENTS": first.endpoints.events,
           "KVVIZ_VLLM_REPLAY": first.endpoints.replay}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # (the lesson's server process inherits them)
    second = None
    try:
        with Server() as lesson:
            page.goto(f"{lesson.url}?node=vllm")
            status = page.locator(".kv-vllm-status")
            expect(status).to_have_attribute("data-state", "connected", timeout=30_000)
            expect(page.locator(".kv-vllm-trunk")).not_to_have_count(0)
            first.close()
            expect(status).to_have_attribute("data-state", "disconnected", timeout=30_000)
            expect(status).to_contain_text("a recording")  # shown meanwhile (starting vLLM: /teacher)
            expect(status).not_to_contain_text("make vllm")
            second = StandIn(tmp_path, port=first.port, started=1.9e9)  # (same port and sockets)
            expect(status).to_have_attribute("data-state", "connected", timeout=30_000)
            expect(page.locator(".kv-vllm-trunk")).to_have_count(0)  # a new server: its cache starts empty
            assert page.kv_errors == []
    finally:
        first.close()
        if second is not None:
            second.close()
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
