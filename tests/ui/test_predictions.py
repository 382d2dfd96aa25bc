"""Predict, then run (issue 11), in headless Chromium: a node's prediction is committed before its
key action and the engine's outcome appears beside it; explain it back's self-checks withhold
their answers until the student has given one; the download holds every prediction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.ui


def note(page, node: str):
    return page.locator(f'.kv-predict-note[data-node="{node}"]')


def test_node_01_prediction_is_locked_in_then_met_by_the_engines_outcome(page, lesson_url):
    page.goto(f"{lesson_url}?node=fragmentation")
    expect(page.locator(".kv-predict-question")).to_contain_text("Will it get its slab?")
    page.get_by_role("button", name="Predict: refused").click()
    expect(note(page, "fragmentation")).to_contain_text("Locked in: refused. Now use Free R2")
    page.get_by_role("button", name="Free R2").click()
    expect(note(page, "fragmentation")).to_have_text(
        "You predicted refused; the engine: refused. Right: after R2's release 16 blocks are free, but the "
        "longest run of them is 8, short of the 12 in a row R4 needs.")
    expect(page.get_by_role("button", name="Predict: refused")).to_be_hidden()  # asked once per Free R2
    # a fresh start: the old verdict goes, the question is back
    page.get_by_role("button", name="Reset").click()
    expect(note(page, "fragmentation")).to_have_count(0)
    expect(page.get_by_role("button", name="Predict: refused")).to_be_visible()
    assert page.kv_errors == []


def test_node_03_takes_a_number_refuses_anything_else_and_compares_after_sharing_on(page, lesson_url):
    page.goto(f"{lesson_url}?node=radix")
    box = page.locator(".kv-predict-number input")
    box.fill("lots")
    page.get_by_role("button", name="Lock in my prediction").click()
    expect(note(page, "radix")).to_contain_text("Type a whole number")
    box.fill("20")
    box.press("Enter")
    expect(note(page, "radix")).to_contain_text("Locked in: 20")
    page.get_by_role("checkbox", name="Prefix sharing").click()
    expect(note(page, "radix")).to_contain_text(
        "You predicted 20; the engine: 18. Not this time: the engine stores each block once: "
        "6 shared + 4 × 3 own = 18 blocks")


def test_explain_withholds_an_answer_until_given_and_downloads_every_prediction(page, lesson_url):
    page.goto(lesson_url)
    page.get_by_role("button", name="Predict: admitted").click()
    page.get_by_role("button", name="Free R2").click()
    expect(note(page, "fragmentation")).to_contain_text("the engine: refused")
    page.locator('.kv-nav-vertical a[data-node="explain"]').click()
    facts = page.locator(".kv-facts")
    # R2 is freed, so node 01's gap now is the answer to the first self-check: withheld.
    expect(facts).to_contain_text("Node 01's longest free gap: (withheld")
    check = page.locator(".kv-check").filter(has_text="What will LARGEST GAP read")
    check.get_by_role("textbox").fill("8")
    check.get_by_role("button", name="Check").click()
    expect(check.locator(".kv-feedback")).to_contain_text("Right: you said 8, the engine says 8.")
    expect(facts).to_contain_text("Node 01's longest free gap: 8 of 16 free blocks.")
    expect(page.locator(".kv-predictions li")).to_have_count(2)
    expect(page.locator(".kv-predictions li").last).to_contain_text("Node 01, ")
    expect(page.locator(".kv-predictions")).not_to_contain_text("Node 01: Node 01")
    with page.expect_download() as download:
        page.locator(".kv-download .bk-btn").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert download.value.suggested_filename.endswith(".md") and text.startswith("# Managing the KV cache")
    assert "| # | Node | Question | Predicted | Engine | Right |" in text  # the predictions, as a table
    assert "| admitted | refused | ✗ no |" in text and "| 8 | 8 | ✓ yes |" in text
    assert "- (1) After R2's release 16 blocks" in text
    record = json.loads(text.split("```json\n")[1].split("\n```")[0])  # and as data, at the end
    assert [p["predicted"] for p in record["predictions"]] == ["admitted", "8"]
    assert page.kv_errors == []
