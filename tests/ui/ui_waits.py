"""Waits on what the browser tests await, never on the clock.

    settled(page)              Bokeh has drawn every figure and the page's layout holds still
    settled(page, "() => …")   ... and this condition (JavaScript, in the page) holds too

"Holds still" is Playwright's own notion of a stable element (the same box over consecutive
animation frames), applied to the whole page: the document's size, the scroll position and the
box of every figure, unchanged over FRAMES frames, with every Bokeh document idle (rendered) and
every figure view finished drawing. The figures' reflow (kvviz/figures/reflow.js) runs in the
browser once a figure knows its width, so it is over when this returns.
"""

from __future__ import annotations

FRAMES = 5

SETTLED_JS = """([frames, condition]) => {
  const state = window.__kvSettled || (window.__kvSettled = {sig: null, same: 0});
  if (typeof Bokeh === "undefined" || Bokeh.documents.length === 0) return false;
  if (![...Bokeh.documents].every((d) => d.is_idle) || document.fonts.status !== "loaded") return false;
  const figures = [];
  const walk = (v) => {
    if (v.model.type === "Figure") figures.push(v);
    for (const c of (v.children ? v.children() : [])) walk(c);
  };
  for (const v of Bokeh.index) walk(v);
  if (!figures.every((v) => v.has_finished())) { state.same = 0; return false; }
  const root = document.documentElement;
  const sig = JSON.stringify([root.scrollWidth, root.scrollHeight, window.scrollX, window.scrollY,
    figures.map((v) => { const r = v.el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height, v.model.height]; })]);
  state.same = sig === state.sig ? state.same + 1 : 0;
  state.sig = sig;
  if (state.same < frames) return false;
  return condition ? Boolean((0, eval)(condition)()) : true;
}"""


def settled(page, condition: str | None = None, timeout: float | None = None) -> None:
    """Until the page has settled (above) and `condition`, a JavaScript function of no
    arguments evaluated in the page, returns something true."""
    page.evaluate("delete window.__kvSettled")
    page.wait_for_function(SETTLED_JS, arg=[FRAMES, condition], polling="raf", timeout=timeout)
