"""A dropped server connection in Chromium: the page says so, and once a server answers again the
student is back where the link says (every node keeps its state in the address bar)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tools.browser import Server, free_port

pytestmark = [pytest.mark.ui, pytest.mark.slow]


def test_a_restarted_server_brings_the_student_back_to_the_state_in_the_link(page):
    port = free_port()
    gap = page.locator('.kv-metric[data-label="LARGEST GAP"] .kv-value')
    with Server(port=port) as server:
        page.goto(f"{server.url}?node=fragmentation")
        expect(gap).to_have_text("8 / 8 free")
        page.get_by_role("button", name="Free R2").click()
        expect(gap).to_have_text("8 / 16 free")
        expect(page).to_have_url(re.compile(r"free_r2=1"))
    banner = page.locator(".kv-connection")
    expect(banner).to_be_visible(timeout=30_000)
    expect(banner).to_contain_text("connection to the class server was lost")
    with Server(port=port):  # a new process: the old session is gone, the link is not
        expect(banner).to_be_hidden(timeout=90_000)  # (the page reloaded itself)
        expect(gap).to_have_text("8 / 16 free")
        assert "free_r2=1" in page.url
        page.get_by_role("button", name="Reset").click()  # and it is live again
        expect(gap).to_have_text("8 / 8 free")
