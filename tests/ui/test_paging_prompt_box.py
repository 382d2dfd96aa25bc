"""Node 02's prompt box after an Add request and a Rewind, on the played lesson (`/`) and on the
live one (`/app`): it suggests what Add request adds next from the state shown (after the Rewind,
the stream's first prompt again); on the played page, a prompt the student wrote stays in it as
the node steps back past that add, until Reset."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from test_page_details_played import LAPTOP, PAGES, open_page

pytestmark = pytest.mark.ui


@pytest.mark.parametrize("which", PAGES)
def test_the_box_suggests_the_next_add_from_the_state_shown_and_keeps_what_the_student_wrote(
        page, recorded, served, which):
    page.set_viewport_size(LAPTOP)
    open_page(page, which, served, "paging")
    node = page.locator(".kv-node-paging").first
    box = node.get_by_role("textbox", name=re.compile("Prompt"))
    step = page.locator('.kv-step[data-node="paging"]').first
    first = box.input_value()
    node.get_by_role("button", name="Add request").click()
    expect(step).to_contain_text("idle", timeout=30_000)
    expect(box).not_to_have_value(first)  # (the next prompt of the stream)
    node.get_by_role("button", name="⟲ Rewind").click()  # (the added request undone: only the first two)
    expect(step).to_contain_text("step 0")
    expect(box).to_have_value(first)
    if which == "live":
        # (the live lesson keeps a student's own text: tests/lesson/test_paging_step_back.py, on the
        # state and its widget. In Chromium on a loaded machine the box here was once found holding
        # the suggestion again after fill() then Rewind: a race between the browser's box and the
        # server's, not settled here; see docs/benchmarks.md, seventeenth session)
        return
    node.get_by_role("button", name="Reset").click()
    node.get_by_role("button", name="Add request").click()
    expect(step).to_contain_text("idle", timeout=30_000)
    box.fill("my own words")  # (not sent: neither Enter nor Add request)
    node.get_by_role("button", name="⟲ Rewind").click()  # (back past the add: not written over)
    expect(step).to_contain_text("step 0")
    expect(box).to_have_value("my own words")
    node.get_by_role("button", name="Step ▶").click()
    expect(step).to_contain_text("step 1")
    expect(box).to_have_value("my own words")
    node.get_by_role("button", name="Reset").click()  # (Reset refills it, as a new page has it)
    expect(box).to_have_value(first)


@pytest.mark.parametrize("which", PAGES)
def test_a_request_rewound_past_is_gone_when_the_node_plays_again(page, recorded, served, which):
    """Add request, Rewind, Play: the live lesson's Rewind undid the request (it came after the first
    step), so Play runs the first two to their end, step 24, the reference's 67% / 89%; the played
    page too, where it played the recorded branch with the request on to step 47."""
    page.set_viewport_size(LAPTOP)
    open_page(page, which, served, "paging")
    node = page.locator(".kv-node-paging").first
    step = page.locator('.kv-step[data-node="paging"]').first
    node.get_by_role("button", name="Add request").click()
    expect(step).to_contain_text("idle", timeout=30_000)
    expect(step).to_contain_text("step 47")
    node.get_by_role("button", name="⟲ Rewind").click()
    expect(step).to_contain_text("step 0")
    node.get_by_role("button", name="▶ Play").click()
    expect(step).to_contain_text("idle", timeout=30_000)
    expect(step).to_contain_text("step 24")
    card = '.kv-metric[data-node="paging"][data-label="{}"] .kv-value'.format
    expect(page.locator(card("CONTIGUOUS")).first).to_have_text("67% full")
    expect(page.locator(card("PAGED")).first).to_have_text("89% full")
    node.get_by_role("button", name="Add request").click()  # (and Add request adds it again, there)
    expect(step).to_contain_text("idle", timeout=30_000)
    expect(step).to_contain_text("step 47")
