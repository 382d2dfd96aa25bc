"""The README's pictures, taken in headless Chromium from the page students open (`/`, the recorded
lesson) at desktop, phone and projector sizes:

    .venv/bin/python -m tools.screenshots [FOLDER]      (default: assets)

writes FOLDER/screenshot.png (1280 wide: node 01 after Free R2, its prediction answered),
FOLDER/screenshot-phone.png (390×844, a phone: node 01's holes in rows of eight) and
FOLDER/screenshot-projector.png (1920×1080: node 03 sharing its prefix, one step lit). Each
checks what it shows before taking it, and stops on any error in the page's console.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tools.browser import CHROMIUM, CHROMIUM_ARGS, Server, settled


def _page(browser, **context):
    page = browser.new_context(**context).new_page()
    page.kv_errors = []
    page.on("console", lambda m: page.kv_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.kv_errors.append(str(e)))
    page.set_default_timeout(60_000)
    return page


def _shoot(page, path: Path) -> Path:
    settled(page)
    page.screenshot(path=str(path))
    if page.kv_errors:
        raise RuntimeError(f"{path.name}: the page's console: {page.kv_errors}")
    return path


def take(base: str, folder: Path) -> list[Path]:
    """The three pictures of the lesson served at `base`, written into `folder`."""
    from playwright.sync_api import expect, sync_playwright  # noqa: PLC0415

    folder.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            desk = _page(browser, viewport={"width": 1280, "height": 1500})
            desk.goto(f"{base}?node=fragmentation")
            desk.get_by_role("button", name="Predict: refused").first.click()
            desk.get_by_role("button", name="Free R2").first.click()
            expect(desk.locator(".kv-headline").first).to_contain_text("R4 refused")
            taken = [_shoot(desk, folder / "screenshot.png")]

            phone = _page(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                          device_scale_factor=2)
            phone.goto(f"{base}?node=fragmentation&free_r2=1")
            expect(phone.locator(".kv-headline").first).to_contain_text("R4 refused")
            phone.locator(".kv-headline").first.evaluate("el => el.scrollIntoView({block: 'start'})")
            taken.append(_shoot(phone, folder / "screenshot-phone.png"))

            wide = _page(browser, viewport={"width": 1920, "height": 1080})
            wide.goto(f"{base}?node=radix&sharing=1")
            expect(wide.locator('.kv-metric[data-label="SAVED"] .kv-value').first).to_have_text("50%")
            wide.get_by_role("button", name="⟲ Rewind").first.click()
            step = wide.locator('.kv-step[data-node="radix"]').first
            expect(step).to_contain_text("step 0 ")
            for n in range(1, 5):
                wide.get_by_role("button", name="Step ▶").first.click()
                expect(step).to_contain_text(f"step {n} ")
            expect(wide.locator(".kv-reads").first).to_contain_text("read by up to 4 requests")
            wide.locator(".kv-sharing").first.evaluate("el => el.scrollIntoView({block: 'start'})")
            taken.append(_shoot(wide, folder / "screenshot-projector.png"))
        finally:
            browser.close()
    return taken


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    with Server() as server:
        server.wait_for_recordings()
        for path in take(server.base, Path(args[0] if args else "assets")):
            print(path)


if __name__ == "__main__":
    main()
