"""Chromium probes (Debian's /usr/bin/chromium): a real student's page on the recorded lesson (`/`)
acting while the class arrives. Each scripted action timed in the page, from the click's event to
the frame that shows the changed number; then Play's pace, a scroll to node 03, a typed question and
Explain it back's self-check. The websockets it opens and the requests it sends during the scripted
actions (the goal: none) are counted, the class's own apart."""

from __future__ import annotations

import os
import re
import time

from benchmarks.classroom.server import descendants, renice_autogroup


def watch(page, element, selector: str, before: str | None = None, pattern: str | None = None) -> None:
    """In the page: when the text at `selector` (in `element`'s shadow root: a card's HTML is written
    anew on a change, its root stays) first differs from `before`, or matches `pattern`, the start of
    the next frame (its paint follows) as `window.kvShown`."""
    root = element.element_handle().evaluate_handle("el => el.getRootNode()")
    page.evaluate("""([root, selector, before, pattern]) => {
        window.kvShown = null;
        const seen = () => {
          const v = root.querySelector(selector);
          const text = v ? v.textContent.trim() : null;
          return text !== null && (pattern ? new RegExp(pattern).test(text) : text !== before.trim());
        };
        const obs = new MutationObserver(() => seen() && (obs.disconnect() || requestAnimationFrame(() => {
          window.kvShown = performance.now(); })));
        obs.observe(root, {subtree: true, childList: true, characterData: true});
      }""", [root, selector, before, pattern])


def shown_ms(page, timeout_ms: int) -> float:
    """Milliseconds from the last click's or key's event in the page to `watch`'s frame."""
    shown = "() => window.kvShown !== null && Math.max(window.kvShown - window.kvT0, 0.01)"
    return page.wait_for_function(shown, timeout=timeout_ms).json_value()


def chromium_probe(base: str, out: dict, actions: int = 24, nice: int = 0) -> None:
    """One student in Chromium, acting for real (run in a thread while the crowd arrives)."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    from tools.browser import CHROMIUM, CHROMIUM_ARGS, settled  # noqa: PLC0415

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if nice:  # (Chromium runs in a session of its own: its niceness alone does not count)
            for pid, name in descendants(os.getpid()):
                if "chrom" in name:
                    renice_autogroup(pid, nice)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        sockets = []
        page.on("websocket", lambda ws: sockets.append(ws.url))
        t0 = time.perf_counter()
        page.goto(base + "/")
        for key in ("Fragmentation", "Paging", "Radix"):
            page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'", timeout=120_000)
        out["ready_s"] = time.perf_counter() - t0
        settled(page, timeout=60_000)  # (a student acts on a page drawn: its layout still for 5 frames)
        out["settled_s"] = time.perf_counter() - t0
        page.evaluate("""() => { for (const kind of ['pointerdown', 'keydown'])
            document.addEventListener(kind, () => { window.kvT0 = performance.now(); }, true); }""")
        clicks = []
        card = '.kv-metric[data-label="{}"] .kv-value'.format
        step = '.kv-step[data-node="fragmentation"]'
        # every request during the scripted actions (but the class's, counted apart: the state polled
        # on a timer, the roster's reports when the node in view changes; issue 31)
        sent, classroom = [], []
        own = ("/lesson-class", "/lesson-report")
        page.on("request", lambda r: out.get("acting") and (classroom if r.url.split("?")[0].endswith(own)
                                                            else sent).append(r.url))
        out["class_requests_during_actions"] = classroom
        plan = [("button", "Add request", '.kv-step[data-node="paging"]'),
                ("button", "Free R2", card("LARGEST GAP")), ("button", "Reset", card("LARGEST GAP")),
                ("slider+", "Reserved length", card("RESERVED · EMPTY")),
                ("slider-", "Reserved length", card("RESERVED · EMPTY")),
                ("button", "◀ Step back", step), ("button", "Step ▶", step),
                ("check", "Prefix sharing", card("BLOCKS STORED")),
                ("uncheck", "Prefix sharing", card("BLOCKS STORED"))]
        for k in range(actions):
            kind, name, selector = plan[k % len(plan)]
            target_text = page.locator(selector).first
            before = target_text.inner_text()
            role = "button" if kind == "button" else "slider" if kind.startswith("slider") else "checkbox"
            target = page.get_by_role(role, name=name).first
            target.scroll_into_view_if_needed()
            watch(page, target_text, selector, before=before)
            out["acting"] = True
            out.setdefault("acting_windows", []).append([time.time(), None])  # (nginx's log: wall clock)
            if role == "slider":
                target.press("ArrowUp" if kind == "slider+" else "ArrowDown")
            else:
                target.click()
            try:  # (from the click's event in the page to the frame that shows the new number)
                ms = shown_ms(page, 10_000)
                clicks.append(ms / 1000)
                out.setdefault("by_action", {}).setdefault(f"{kind} {name}", []).append(round(ms, 1))
            except Exception as e:  # noqa: BLE001 (an action that changed nothing: e.g. Step at the end)
                out["last_error"] = str(e)[:300]
                out["unchanged"] = out.get("unchanged", 0) + 1
            page.wait_for_timeout(600)  # (the address bar is written twice a second at most)
            out["acting"] = False
            out["acting_windows"][-1][1] = time.time()
        out["clicks_s"] = clicks
        out["requests_during_actions"] = sent
        # Play's pace: node 01 from its start, from the click to the frame that shows step 30 (nominal
        # 250 ms a step; timed in the page: a locator's polling would add up to half a second)
        page.get_by_role("button", name="⟲ Rewind").first.click()
        watch(page, page.locator(step).first, step, pattern=r"\bstep 30\b")
        page.get_by_role("button", name="▶ Play").first.click()
        out["play_steps_per_s"] = 30 / (shown_ms(page, 60_000) / 1000)
        # Everyone scrolls to node 03 at the teacher's word: until its strip is on screen
        t = time.perf_counter()
        page.get_by_role("checkbox", name="Prefix sharing").first.scroll_into_view_if_needed()
        page.locator(".kv-metric[data-label='BLOCKS STORED']").first.wait_for(state="visible")
        out["scroll_s"] = time.perf_counter() - t
        # A question of the student's own: from Enter to the engine's answer drawn in the page
        box = page.get_by_role("textbox", name=re.compile("Your question")).first
        box.fill(f"Why is a page {len(sockets) + 16} tokens long?")
        t = time.perf_counter()
        box.press("Enter")
        page.locator(".kv-live-note", has_text="Live").first.wait_for(state="visible", timeout=60_000)
        out["typed_s"] = time.perf_counter() - t
        # Explain it back, on the same page: a self-check from Enter to the engine's answer shown
        check = page.locator(".kv-recorded-explain").get_by_placeholder("a whole number").first
        check.scroll_into_view_if_needed()
        check.fill("8")
        t = time.perf_counter()
        check.press("Enter")
        feedback = page.locator('.kv-feedback[data-check="gap_after_free"]', has_text="the engine says")
        feedback.wait_for(timeout=60_000)
        out["self_check_s"] = time.perf_counter() - t
        out["websockets"] = sockets
        browser.close()
