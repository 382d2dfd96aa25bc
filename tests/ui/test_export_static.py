"""The static export in Chromium, opened from disk with the network blocked: the recorded figures,
the controls and the transport replay the real engine's states."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from kvviz.nodes.fragmentation.state import FragmentationState

pytestmark = pytest.mark.ui


@pytest.fixture
def offline(page):
    """The page, with every request that is not a file refused (a course page with no network)."""
    refused = []

    def route(r):
        if r.request.url.startswith("file:"):
            return r.continue_()
        refused.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    page.kv_refused = refused
    return page


def open_node(page, site, key: str):
    page.goto((site / f"{key}.html").as_uri())
    page.wait_for_function(f"document.documentElement.dataset.kvReady{key.capitalize()} === '1'")


def metric(page, label: str):
    return page.locator(f'.kv-metric[data-label="{label}"] .kv-value')


def test_node_01_defaults_free_r2_slider_and_transport(offline, static_site):
    page = offline
    open_node(page, static_site, "fragmentation")
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")
    predict = page.get_by_role("button", name=re.compile(r"^Predict"))  # (needs a live engine to answer)
    assert predict.count() > 0
    for k in range(predict.count()):
        expect(predict.nth(k)).to_be_disabled()
    page.get_by_role("button", name="Free R2").click()
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 16 free")
    page.get_by_role("button", name="Reset").click()
    expect(metric(page, "LARGEST GAP")).to_have_text("8 / 8 free")
    page.get_by_role("slider", name=re.compile("Reserved length")).press("ArrowUp")
    nine = FragmentationState(reserve=9).snapshot.metrics  # what the live engine shows at 9
    expect(metric(page, "RESERVED · EMPTY")).to_have_text(f"{nine.blocks_reserved_empty} blk")
    page.get_by_role("button", name="⟲ Rewind").click()
    expect(page.locator(".kv-step")).to_contain_text("step 0")
    page.get_by_role("button", name="Step ▶").click()
    expect(page.locator(".kv-step")).to_contain_text("step 1")
    page.get_by_role("button", name="▶ Play").click()
    expect(page.locator(".kv-step")).to_contain_text(re.compile(r"step ([3-9]|\d\d)"))
    expect(page.get_by_role("button", name="❚❚ Pause")).to_be_visible()
    assert page.kv_errors == [] and page.kv_refused == []


def test_node_03_sharing_on_and_live_only_controls_disabled(offline, static_site):
    page = offline
    open_node(page, static_site, "radix")
    expect(metric(page, "SAVED")).to_have_text("0%")
    page.get_by_role("checkbox", name="Prefix sharing").check()
    expect(metric(page, "BLOCKS STORED")).to_have_text("18 blk")
    expect(metric(page, "vs NO SHARING")).to_have_text("36 blk")
    expect(metric(page, "SAVED")).to_have_text("50%")
    expect(page.get_by_role("button", name="Fill the pool")).to_be_disabled()
    expect(page.locator(".kv-recording")).to_contain_text("A recording of the live lesson")
    assert page.kv_errors == [] and page.kv_refused == []


def test_node_02_add_request_plays_the_recorded_request(offline, static_site):
    page = offline
    open_node(page, static_site, "paging")
    before = page.locator(".kv-step").inner_text()
    page.get_by_role("button", name="Add request").click()
    expect(page.locator(".kv-step")).not_to_have_text(before)
    expect(page.locator(".kv-step")).to_contain_text("idle", timeout=20_000)  # played to the end
    assert page.kv_errors == [] and page.kv_refused == []


def test_the_whole_lesson_page_holds_every_node(offline, static_site):
    page = offline
    page.goto((static_site / "index.html").as_uri())
    for key in ("Fragmentation", "Paging", "Radix"):
        page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'")
    expect(metric(page, "IN USE")).to_have_text("12 / 32 · 38%")
    expect(metric(page, "vs NO SHARING")).to_have_text("36 blk")
    assert page.kv_errors == [] and page.kv_refused == []
