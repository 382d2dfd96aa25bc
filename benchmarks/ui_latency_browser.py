"""The UI latency benchmark's browser side (benchmarks/ui_latency.py plans, this drives): each
node's planned interactions done in headless Chromium on the served app, each timed in the page
from the click or key event to the frame that paints the expected metric texts.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tools.browser import CHROMIUM, CHROMIUM_ARGS

if TYPE_CHECKING:
    from benchmarks.ui_latency import Action, Interaction

PAUSE_S = 0.2  # between interactions, as a person would: the previous update has settled
PAGE_TIMEOUT_S, UPDATE_TIMEOUT_S, ENABLED_TIMEOUT_S = 90, 60, 5

# Arms one measurement of the cards [{sel, before, expected}]: checks that each shows `before`,
# then window.__kvLatency resolves to {t0, tDom, tFrame, seen} once all show `expected`, or {error}.
ARM_JS = """
({cards, timeoutMs}) => {
  const deep = (root, sel) => {
    const hit = root.querySelector(sel);
    if (hit) return hit;
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) { const h = deep(el.shadowRoot, sel); if (h) return h; }
    }
    return null;
  };
  const found = cards.map((c) => deep(document, c.sel));
  for (const [k, c] of cards.entries()) {
    if (!found[k]) return `no element ${c.sel}`;
    if (found[k].textContent !== c.before) {
      return `${c.sel}: expected ${JSON.stringify(c.before)} before the action, `
        + `found ${JSON.stringify(found[k].textContent)}`;
    }
  }
  const scopes = found.map((el) => el.getRootNode());  // each card is its own pane's shadow root
  const texts = () => cards.map((c, k) => {
    if (scopes[k].host && !scopes[k].host.isConnected) {
      const el = deep(document, c.sel);
      if (el) scopes[k] = el.getRootNode();
    }
    const el = scopes[k].querySelector(c.sel);
    return el ? el.textContent : null;
  });
  let t0 = null, tDom = null, done = false;
  const seen = [cards.map((c) => c.before).join(" | ")];
  const start = () => { if (t0 === null) t0 = performance.now(); };
  window.addEventListener("click", start, {capture: true});
  window.addEventListener("keydown", start, {capture: true});
  window.__kvLatency = new Promise((resolve) => {
    const observers = [];
    const finish = (result) => {
      if (done) return;
      done = true;
      observers.forEach((o) => o.disconnect());
      clearTimeout(timer);
      window.removeEventListener("click", start, {capture: true});
      window.removeEventListener("keydown", start, {capture: true});
      resolve({...result, seen});
    };
    const check = () => {
      if (done || tDom !== null) return;
      const now = texts();
      if (now.join(" | ") !== seen[seen.length - 1]) seen.push(now.join(" | "));
      if (!now.every((text, k) => text === cards[k].expected)) return;
      if (t0 === null) { finish({error: "the cards changed before the action"}); return; }
      tDom = performance.now();
      requestAnimationFrame(() => finish({t0, tDom, tFrame: performance.now()}));
    };
    for (const scope of new Set(scopes)) {
      const o = new MutationObserver(check);
      o.observe(scope, {subtree: true, childList: true, characterData: true});
      observers.push(o);
    }
    const poll = () => { if (!done) { check(); requestAnimationFrame(poll); } };
    requestAnimationFrame(poll);
    const timer = setTimeout(() => finish({error: "timeout", t0}), timeoutMs);
  });
  return null;
}
"""


def metric_selector(node: str, label: str) -> str:
    return f'.kv-metric[data-node="{node}"][data-label="{label}"] .kv-value'


def target(page, action: Action, role: str):
    """The widget in the page: buttons by accessible name; sliders and checkboxes (which Bokeh
    leaves without one) by the widget whose text holds the label."""
    if role == "button":
        found = page.get_by_role("button", name=action.widget)
    else:
        kind = {"slider": "Slider", "checkbox": "Checkbox"}[role]
        found = page.locator(f".bk-{kind}").filter(has_text=action.widget).get_by_role(role)
    if found.count() != 1:
        raise LookupError(f"{found.count()} {role}s labelled {action.widget!r} in the page")
    return found


def measure(page, node: str, step: Interaction) -> dict:
    """Do `step` in the page; its times in ms: 'frame' (to the painted frame) and 'dom'."""
    cards = [{"sel": metric_selector(node, label), "before": step.before[label], "expected": text}
             for label, text in step.after.items()]
    error = page.evaluate(ARM_JS, {"cards": cards, "timeoutMs": UPDATE_TIMEOUT_S * 1000})
    if error:
        raise RuntimeError(f"node {node}, {step.action.name}: {error}")
    widget = target(page, step.action, step.role)
    deadline = time.monotonic() + ENABLED_TIMEOUT_S
    while not widget.is_enabled():
        if time.monotonic() > deadline:
            raise RuntimeError(f"node {node}: {step.action.name!r} disabled in the page, not in the mirror")
        time.sleep(0.05)
    if step.action.key:
        widget.press(step.action.key)
    else:
        widget.click()
    r = page.evaluate("() => window.__kvLatency")
    if "error" in r:
        raise RuntimeError(f"node {node}, {step.action.name}: {r['error']}; expected "
                           f"{' | '.join(step.after.values())!r}, saw {r['seen']}")
    if step.settled is not None:  # Add request plays on: wait for it to end, as a student watches
        page.locator(f'.kv-step[data-node="{node}"]').filter(has_text="idle").wait_for()
        for label, text in step.settled.items():
            page.locator(metric_selector(node, label)).filter(has_text=text).wait_for()
    return {"frame": float(r["tFrame"] - r["t0"]), "dom": float(r["tDom"] - r["t0"])}  # (JSON may give ints)


def drive(url: str, plans: dict, warmup: int) -> tuple[dict[str, list[dict]], list[str], str]:
    """Every node's planned interactions in headless Chromium; (times per node, console errors,
    browser version). The first `warmup` of each node are done but not returned."""
    from playwright.sync_api import sync_playwright  # a test requirement: imported only when used

    times, errors = {}, []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for node, (initial, steps) in plans.items():
                page = browser.new_page()
                page.set_default_timeout(PAGE_TIMEOUT_S * 1000)
                page.on("console",
                        lambda m, n=node: errors.append(f"{n}: {m.text}") if m.type == "error" else None)
                page.on("pageerror", lambda e, n=node: errors.append(f"{n}: {e}"))
                page.goto(f"{url}?node={node}")
                for label, text in initial.items():
                    page.locator(metric_selector(node, label)).filter(has_text=text).wait_for()
                results = []
                for step in steps:
                    time.sleep(PAUSE_S)
                    results.append(measure(page, node, step))
                times[node] = results[warmup:]
                page.close()
            return times, errors, browser.version
        finally:
            browser.close()
