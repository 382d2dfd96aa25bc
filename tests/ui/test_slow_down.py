"""A page told to slow down (429 from /lesson-live: kvviz/process/throttle.py, or nginx's) shows the
server's sentence, keeps what the student typed, and sends nothing more while Retry-After lasts:
pressing Enter again does not start a storm (kvviz/export/player_live.js)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from kvviz.process.throttle import SLOW_DOWN

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def recorded(served):
    served.wait_for_recordings()
    return served.base


def test_a_slow_down_is_shown_the_typed_text_stays_and_enter_again_sends_nothing(page, recorded):
    page.goto(recorded)
    page.wait_for_function("document.documentElement.dataset.kvReadyRadix === '1'")
    asked = []

    def slow_down(route):
        asked.append(route.request.url)
        route.fulfill(status=429, headers={"Retry-After": "60", "Cache-Control": "no-store"},
                      content_type="application/json",
                      body=json.dumps({"ok": False, "message": SLOW_DOWN, "retry_after_s": 60}))

    page.route("**/lesson-live?*", slow_down)
    box = page.get_by_role("textbox", name=re.compile("Your question")).first
    box.fill("What is a page?")
    box.press("Enter")
    said = page.locator(".kv-slow-down").first
    expect(said).to_have_text(SLOW_DOWN)
    expect(box).to_have_value("What is a page?")  # (nothing the student typed is lost)
    idle = "!window.kvvizPlayer.nodes.radix.busy"  # (no request of the node's in flight)
    for _ in range(3):  # the student presses Enter again, impatient
        box.press("Enter")
        page.wait_for_function(idle)
    page.get_by_role("button", name="Release oldest").click()  # (a button the server would run: held too)
    page.wait_for_function(idle)
    expect(said).to_have_text(SLOW_DOWN)
    assert len(asked) == 1  # only the first reached the network
    expect(box).to_have_value("What is a page?")
    assert page.kv_errors == [] or all("429" in e for e in page.kv_errors)
