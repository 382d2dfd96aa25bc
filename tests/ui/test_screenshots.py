"""The README's pictures, taken in headless Chromium at desktop, phone and projector sizes:

    KVVIZ_SCREENSHOTS=assets .venv/bin/python -m pytest tests/ui/test_screenshots.py

writes assets/screenshot.png (1280 wide: the page's top and node 01 after Free R2),
assets/screenshot-phone.png (390×844, a phone: node 01's holes in rows of eight) and
assets/screenshot-projector.png (1920×1080: node 03 sharing its prefix, one step lit). Skipped
unless KVVIZ_SCREENSHOTS names a folder; each still checks what it shows before taking it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect
from ui_waits import settled

pytestmark = [pytest.mark.ui, pytest.mark.skipif(not os.environ.get("KVVIZ_SCREENSHOTS"),
                                                 reason="set KVVIZ_SCREENSHOTS to a folder to take the README's pictures")]


def out(name: str) -> str:
    folder = Path(os.environ["KVVIZ_SCREENSHOTS"])
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / name)


def test_desktop(page, lesson_url):
    page.set_viewport_size({"width": 1280, "height": 1500})
    page.goto(lesson_url)
    page.get_by_role("button", name="Predict: refused").click()
    page.get_by_role("button", name="Free R2").click()
    expect(page.locator(".kv-headline")).to_contain_text("R4 refused")
    settled(page)
    page.screenshot(path=out("screenshot.png"))
    assert page.kv_errors == []


def test_phone(browser, lesson_url):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)
    page = context.new_page()
    page.goto(f"{lesson_url}?node=fragmentation&free_r2=1")
    expect(page.locator(".kv-headline")).to_contain_text("R4 refused")
    page.locator(".kv-headline").evaluate("el => el.scrollIntoView({block: 'start'})")
    settled(page)
    page.screenshot(path=out("screenshot-phone.png"))
    context.close()


def test_projector(page, lesson_url):
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(f"{lesson_url}?node=radix&sharing=1")
    expect(page.locator('.kv-metric[data-label="SAVED"] .kv-value')).to_have_text("50%")
    page.get_by_role("button", name="⟲ Rewind").click()
    expect(page.locator(".kv-step")).to_contain_text("step 0 ")
    for n in range(1, 5):
        page.get_by_role("button", name="Step ▶").click()
        expect(page.locator(".kv-step")).to_contain_text(f"step {n} ")
    expect(page.locator(".kv-reads")).to_contain_text("read by up to 4 requests")
    page.locator(".kv-sharing").first.evaluate("el => el.scrollIntoView({block: 'start'})")
    settled(page)
    page.screenshot(path=out("screenshot-projector.png"))
    assert page.kv_errors == []
