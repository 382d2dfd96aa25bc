"""Node 04 in Chromium with no vLLM (the default `make lesson`): the shipped recording of a real
vLLM session plays with the live figures, says it is a recording (vLLM version, date), shows real
cards and vLLM's shared trunk, no command meant for the teacher, and replays on request."""

from __future__ import annotations

import re

import pytest
from phone_checks import FIT_JS, PHONE
from playwright.sync_api import expect

from kvviz.nodes.vllm.shipped import PATH
from tools.browser import Server, settled
from vllm_watch.recording import load

pytestmark = pytest.mark.ui

NOBODY = {"KVVIZ_VLLM_URL": "http://127.0.0.1:9", "KVVIZ_VLLM_EVENTS": "ipc:///nonexistent/kvviz-events",
          "KVVIZ_VLLM_REPLAY": "ipc:///nonexistent/kvviz-replay"}


OUR_BOXES = """() => [...Bokeh.documents[0].all_models].some((m) => m.type === "Figure"
  && (m.css_classes || []).includes("kv-our-tree")
  && m.renderers.find((r) => r.glyph.type === "Rect").data_source.data.label.filter((t) => t).length >= 5)"""


@pytest.fixture(scope="module")
def no_vllm_url():
    with Server(env=NOBODY) as lesson:
        yield lesson.url


def test_node_04_without_vllm_plays_the_recording(page, no_vllm_url):
    rec = load(PATH)
    page.goto(f"{no_vllm_url}?node=vllm")
    status = page.locator(".kv-vllm-status")
    expect(status).to_have_attribute("data-state", "recording", timeout=30_000)
    expect(status).to_contain_text("A recording, not live")
    expect(status).to_contain_text(f"vLLM {rec.vllm_version}")
    expect(status).to_contain_text(rec.day)
    expect(page.locator(".kv-vllm-trunk")).to_have_attribute("data-trunk", "3")
    for label in ("KV USAGE", "CACHED BLOCKS", "PREFIX HIT RATE", "RUNNING · WAITING", "PREEMPTIONS"):
        expect(page.locator(f'.kv-metric[data-label="{label}"] .kv-value')).not_to_have_text("–")
    expect(page.locator('.kv-metric[data-label="CACHED BLOCKS"] .kv-value')).to_have_text(
        re.compile(r"^\d+ / 64$"))
    expect(page.locator('.kv-metric[data-label="SAME TOKENS"] .kv-value')).to_have_text(
        f"{len(rec.exchanges)} / {len(rec.exchanges)}", timeout=60_000)
    assert page.locator(".kv-vllm-tree").bounding_box()["height"] > 200
    # (kvviz's engine serves the recorded questions after this server's first page was sent: its tree
    # arrives by the poll, which starts once the page has loaded; before, 3 first pages in 4 lost it)
    page.wait_for_function(OUR_BOXES, timeout=30_000)
    expect(page.get_by_role("button", name="Send to vLLM")).to_be_hidden()
    assert "make vllm" not in page.locator("body").inner_text()
    page.get_by_role("button", name="▶ Replay the recording").click()
    expect(page.get_by_role("button", name="Replaying…")).to_be_visible(timeout=10_000)
    expect(page.get_by_role("button", name="▶ Replay the recording")).to_be_visible(timeout=60_000)
    expect(page.locator(".kv-vllm-trunk")).to_have_attribute("data-trunk", "3")
    assert page.kv_errors == []


def test_node_04_on_a_phone_keeps_its_tree_labels_in_their_boxes(browser, no_vllm_url):
    """On a phone the two trees (5 blocks deep) draw each box's short labels (its first words,
    a short hash or its block number), which fit; the hover keeps the whole text."""
    context = browser.new_context(**PHONE)
    page = context.new_page()
    rec = load(PATH)
    page.goto(f"{no_vllm_url}?node=vllm")
    expect(page.locator('.kv-metric[data-label="SAME TOKENS"] .kv-value')).to_have_text(
        f"{len(rec.exchanges)} / {len(rec.exchanges)}", timeout=60_000)
    settled(page)
    fit = page.evaluate(FIT_JS)
    assert fit["checked"] >= 2 * 15 * 2  # both trees: every box's two lines
    assert fit["spills"] == [] and fit["clipped"] == []
    context.close()
