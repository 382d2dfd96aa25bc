"""Node 04 in the static export, opened from disk with the network blocked: the shipped vLLM
recording plays with node 04's own figures, says it is a recording (vLLM's version, the date),
and Replay steps through it in the browser; index.html holds it after node 03."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from kvviz.nodes.vllm.shipped import PATH
from kvviz.nodes.vllm.state import VllmState
from kvviz.nodes.vllm.text import CARDS
from kvviz.nodes.vllm.view import VllmView
from vllm_watch.recording import load
from vllm_watch.snapshot import Endpoints

pytestmark = pytest.mark.ui

NOBODY = Endpoints("http://127.0.0.1:9", "ipc:///nonexistent/kvviz-events", "ipc:///nonexistent/kvviz-replay")


@pytest.fixture
def offline(page):
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    return page


def metric(page, label: str):
    return page.locator(f'.kv-metric[data-node="vllm"][data-label="{label}"] .kv-value')


def test_node_04_plays_the_vllm_recording_labelled_as_one(offline, static_site):
    page, rec = offline, load(PATH)
    page.goto((static_site / "vllm.html").as_uri())
    page.wait_for_function("document.documentElement.dataset.kvReadyVllm === '1'")
    status = page.locator(".kv-vllm-status")
    expect(status).to_have_attribute("data-state", "recording")
    expect(status).to_contain_text(f"A recording, not live: vLLM {rec.vllm_version}")
    expect(status).to_contain_text(rec.day)
    expect(status).not_to_contain_text("When a vLLM answers")  # (nothing to connect to from a static page)
    # The cards the live node shows at the recording's end, from the same code.
    state = VllmState(endpoints=NOBODY)
    VllmView(state=state)
    state.show_recorded()
    for card in CARDS:
        expect(metric(page, card.label)).to_have_text(card.value(state))
    n = len(rec.exchanges)
    expect(metric(page, "SAME TOKENS")).to_have_text(f"{n} / {n}")
    expect(page.locator(".kv-vllm-trunk")).to_have_attribute("data-trunk", "3")
    expect(page.get_by_role("button", name="Send to vLLM")).to_be_hidden()
    end = metric(page, "CACHED BLOCKS").inner_text()
    page.get_by_role("button", name="▶ Replay the recording").click()
    expect(page.get_by_role("button", name="Replaying…")).to_be_visible()
    expect(metric(page, "CACHED BLOCKS")).not_to_have_text(end)  # the cache grows again from the start
    expect(page.get_by_role("button", name="▶ Replay the recording")).to_be_visible(timeout=30_000)
    expect(metric(page, "CACHED BLOCKS")).to_have_text(end)
    assert page.kv_errors == []


def test_the_index_page_holds_node_04_after_node_03(offline, static_site):
    page = offline
    page.goto((static_site / "index.html").as_uri())
    for key in ("Fragmentation", "Paging", "Radix", "Vllm"):
        page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'")
    expect(page.locator(".kv-vllm-status")).to_contain_text("A recording, not live")
    radix, vllm = (page.locator(f".kv-node-{k}").first.bounding_box() for k in ("radix", "vllm"))
    assert vllm["y"] > radix["y"]
    assert page.kv_errors == []
