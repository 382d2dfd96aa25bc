"""The classroom benchmark's Chromium probes (benchmarks/classroom.py): real pages that open the
lesson and act in it, timing click -> changed card text in the page itself, and the CPU they
take (Debian's /usr/bin/chromium, never a downloaded browser)."""

from __future__ import annotations

import os
import time

from benchmarks.classroom_server import cpu_seconds, descendants

OPEN_TIMEOUT_S = 120  # seconds a page may take to open (the protocol students' too)

# -- Chromium probes --------------------------------------------------------------------------------
# Arms one timing in the page: resolves window.__kvT to ms from the next click/keydown to the first
# change of the node's metric cards or step counter (null after 20 s).
ARM_JS = """
(node) => {
  const sel = `.kv-metric[data-node="${node}"], .kv-step[data-node="${node}"]`;
  const roots = new Set();
  const find = (root) => {
    for (const el of root.querySelectorAll(sel)) roots.add(el.getRootNode());
    for (const el of root.querySelectorAll("*")) if (el.shadowRoot) find(el.shadowRoot);
  };
  find(document);
  const texts = () => [...roots].flatMap((r) => [...r.querySelectorAll(sel)]).map((e) => e.textContent).join("|");
  const before = texts();
  let t0 = null;
  const start = () => { if (t0 === null) t0 = performance.now(); };
  window.addEventListener("click", start, {capture: true});
  window.addEventListener("keydown", start, {capture: true});
  window.__kvT = new Promise((resolve) => {
    const observers = [];
    const done = (v) => {
      observers.forEach((o) => o.disconnect());
      window.removeEventListener("click", start, {capture: true});
      window.removeEventListener("keydown", start, {capture: true});
      resolve(v);
    };
    const check = () => {
      if (t0 !== null && texts() !== before) requestAnimationFrame(() => done(performance.now() - t0));
    };
    for (const r of roots) {
      const o = new MutationObserver(check);
      o.observe(r, {subtree: true, childList: true, characterData: true});
      observers.push(o);
    }
    setTimeout(() => done(null), 20000);
  });
  return roots.size;
}
"""


def browser_cpu_seconds(server_pid: int | None) -> float:
    """CPU seconds so far of every process under this one but the class server it started
    (`server_pid`, with --start): Playwright's driver and Chromium."""
    server = {server_pid, *descendants(server_pid)} if server_pid else set()
    return sum(c for c in (cpu_seconds(p) for p in descendants(os.getpid()) if p not in server) if c is not None)


class _StillPlaying(Exception):
    """The probe's node kept playing: its texts change on their own, the click is not timed."""


def run_probes(url: str, count: int, open_at: list[float], act_from: float, act_until: float, every: float,
               t_start: float, server_pid: int | None = None) -> dict:
    """`count` Chromium pages: open at t_start+open_at[i], act from act_from to act_until (perf_counter
    times) in turn; returns their ready times and in-page latencies. Runs in its own thread."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    from tools.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: PLC0415

    out = {"ready_s": [], "latency_ms": [], "by_action": {}, "errors": [], "unchanged": 0, "skipped_playing": 0}
    cycle = (("paging", "add"), ("radix", "sharing"), ("fragmentation", "reserve"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            pages = []
            for i in range(count):
                delay = t_start + open_at[i] - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
                t0 = time.perf_counter()
                try:
                    page.goto(url, timeout=OPEN_TIMEOUT_S * 1000)
                    page.wait_for_selector(".kv-metric", timeout=OPEN_TIMEOUT_S * 1000)
                    out["ready_s"].append(time.perf_counter() - t0)
                    pages.append(page)
                except Exception as e:  # noqa: BLE001
                    out["errors"].append(f"probe {i} open: {type(e).__name__}: {e}"[:300])
            delay = act_from - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            cpu0, t_cpu0 = browser_cpu_seconds(server_pid), time.perf_counter()
            k = 0
            while pages and time.perf_counter() < act_until:
                page = pages[k % len(pages)]
                node, what = cycle[(k // len(pages)) % len(cycle)]
                t_next = time.perf_counter() + every / len(pages)
                try:
                    section = page.locator(f".kv-node-{node}")
                    section.first.scroll_into_view_if_needed(timeout=OPEN_TIMEOUT_S * 1000)
                    page.locator(f'.kv-metric[data-node="{node}"]').first.wait_for(timeout=OPEN_TIMEOUT_S * 1000)
                    counter = page.locator(f'.kv-step[data-node="{node}"]').first
                    deadline = time.perf_counter() + every
                    while "playing" in (counter.text_content(timeout=5000) or "") and time.perf_counter() < deadline:
                        page.wait_for_timeout(200)  # a play tick would change the texts too: wait it out
                    if "playing" in (counter.text_content(timeout=5000) or ""):
                        raise _StillPlaying
                    if page.evaluate(ARM_JS, node) == 0:
                        raise LookupError(f"no cards of node {node} in the page")
                    if what == "add":
                        section.get_by_role("button", name="Add request").first.click()
                    elif what == "sharing":
                        section.get_by_role("checkbox", name="Prefix sharing").first.click()
                    else:
                        slider = section.get_by_role("slider").first
                        slider.focus()
                        page.keyboard.press("ArrowUp" if (k // 3) % 2 == 0 else "ArrowDown")
                    ms = page.evaluate("window.__kvT")
                    if ms is None:
                        out["unchanged"] += 1
                    else:
                        out["latency_ms"].append(ms)
                        out["by_action"].setdefault(what, []).append(ms)
                except _StillPlaying:
                    out["skipped_playing"] += 1
                except Exception as e:  # noqa: BLE001
                    out["errors"].append(f"probe {k % len(pages)} {what}: {type(e).__name__}: {e}"[:300])
                k += 1
                delay = t_next - time.perf_counter()
                if delay > 0:
                    page.wait_for_timeout(1000 * delay)
            out["act_cpu_cores"] = (browser_cpu_seconds(server_pid) - cpu0) / max(time.perf_counter() - t_cpu0, 1e-9)
            for page in pages:
                page.context.close()
        finally:
            browser.close()
    return out
