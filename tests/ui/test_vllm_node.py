"""Node 04 in Chromium against a real vLLM (tests/vllm_support.py): it connects, the lesson's four
questions build one shared trunk in vLLM's cache, both engines write the same tokens, and a
server killed mid-lesson shows as disconnected, then is picked up again when it is back
(tests/ui/test_vllm_reconnect.py, against a stand-in: a real vLLM takes a minute to start again)."""

from __future__ import annotations

import os
import re

import pytest
import vllm_support
from playwright.sync_api import expect

from tools.browser import Server, settled

# (one worker under pytest-xdist: the session's one vLLM serves every test that needs it)
pytestmark = [pytest.mark.ui, pytest.mark.slow, pytest.mark.xdist_group("vllm")]


@pytest.fixture(scope="module")
def vllm_lesson():
    """(the vLLM server, the URL of a lesson served with node 04 pointed at it)"""
    srv = vllm_support.server()
    env = {"KVVIZ_VLLM_URL": srv.url, "KVVIZ_VLLM_EVENTS": srv.events, "KVVIZ_VLLM_REPLAY": srv.replay}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # (the lesson's server process inherits them)
    try:
        with Server() as lesson:
            yield srv, lesson.url
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def test_node_04_shows_vllms_shared_trunk_and_identical_tokens(page, vllm_lesson):
    _, url = vllm_lesson
    page.goto(f"{url}?node=vllm")
    status = page.locator(".kv-vllm-status")
    expect(status).to_have_attribute("data-state", "connected", timeout=30_000)
    expect(status).to_contain_text("kvviz")
    page.get_by_role("button", name="Send the lesson's four questions").click()
    rows = page.locator(".kv-exchanges tr[data-verdict='same']")
    expect(rows).to_have_count(4, timeout=60_000)
    trunk = page.locator(".kv-vllm-trunk")
    expect(trunk).to_have_attribute("data-trunk", "3", timeout=30_000)
    expect(trunk).to_contain_text("You are a patient teacher")
    expect(page.locator('.kv-metric[data-label="SAME TOKENS"] .kv-value')).to_have_text("4 / 4")
    expect(page.locator('.kv-metric[data-label="SAME BLOCKS"] .kv-value')).to_have_text(
        re.compile(r"^(\d+) / \1$"))
    expect(page.locator('.kv-metric[data-label="CACHED BLOCKS"] .kv-value')).to_have_text(
        re.compile(r"^\d+ / 64$"))
    assert page.locator(".kv-vllm-tree").bounding_box()["height"] > 200
    assert page.kv_errors == []


def test_node_04_fits_a_phone(page, vllm_lesson):
    _, url = vllm_lesson
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{url}?node=vllm")
    expect(page.locator(".kv-vllm-status")).to_have_attribute("data-state", "connected", timeout=30_000)
    settled(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
