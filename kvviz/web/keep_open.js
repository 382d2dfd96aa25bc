// A <details> the student opened stays open when its pane is written again, and its summary keeps
// the keyboard's focus (kvviz/web/keep_open.py).
// A pane's <details> are told apart by their summary (its aria-label, else its text) and, among
// those alike, by their order.
function summaryOf(details) {
  const s = details.querySelector(":scope > summary");
  return s ? s.getAttribute("aria-label") || s.textContent.trim() : "";
}

function keyed(root) { // [key, details] for every <details> of a pane's shadow root, in order
  const seen = new Map();
  return [...root.querySelectorAll("details")].map((d) => {
    const name = summaryOf(d), n = seen.get(name) || 0;
    seen.set(name, n + 1);
    return [`${name}#${n}`, d];
  });
}

export function render({ model }) {
  const opened = new Map(); // a pane's shadow root -> the keys of its <details> open now
  const focused = new Map(); // a pane's shadow root -> the key of its summary that has the focus
  const observers = [];
  const mark = (root, d, open) => { // (a followed pane's <details> `d` is open, or not)
    const keys = opened.get(root), found = keys && keyed(root).find(([, x]) => x === d);
    if (found) open ? keys.add(found[0]) : keys.delete(found[0]);
  };
  const onToggle = ({ target: d }) => { if (d instanceof HTMLDetailsElement) mark(d.getRootNode(), d, d.open); };
  const onFocus = (event) => {
    const d = event.target.tagName === "SUMMARY" && event.target.parentElement;
    const found = d && keyed(event.target.getRootNode()).find(([, x]) => x === d);
    focused.set(event.target.getRootNode(), found ? found[0] : null);
  };
  const onBlur = (event) => { // (a focused element written away loses the focus with no event, or with
    const root = event.target.getRootNode(); // one: wait, a redraw's reopen() comes first)
    setTimeout(() => { if (!root.activeElement) focused.delete(root); }, 0);
  };
  const reopen = (root) => { // (the pane written again: its <details> are new, and closed)
    const keys = opened.get(root), had = focused.get(root);
    for (const [key, d] of keyed(root)) {
      if (keys.has(key) && !d.open) d.open = true;
      const s = d.querySelector(":scope > summary");
      const lost = !root.activeElement && [document.body, null].includes(document.activeElement);
      if (key === had && s && lost) s.focus({ preventScroll: true }); // (the keyboard's place kept)
    }
  };
  // A summary focused or clicked (a pointer's click, or Enter or space on a focused one) comes before
  // its <details> toggles: the pane it is in is followed from then on. (Its toggle events do not
  // leave the pane's shadow root: they are caught there.)
  // (a click on a summary: what it is about to do to its <details>, kept at once, before the
  // toggle event that follows; a redraw that comes between must not undo it)
  const clicked = (root, summary) => mark(root, summary.parentElement, !summary.parentElement.open);
  const follow = (event) => {
    const summary = event.composedPath().find((n) => n && n.tagName === "SUMMARY");
    const root = summary && summary.getRootNode();
    if (!root || root === document) return;
    if (opened.has(root)) {
      if (event.type === "click") clicked(root, summary);
      return;
    }
    opened.set(root, new Set());
    root.addEventListener("toggle", onToggle, true);
    root.addEventListener("focusin", onFocus, true);
    root.addEventListener("focusout", onBlur, true);
    if (root.activeElement === summary) onFocus({ target: summary }); // (focused before it was followed)
    if (event.type === "click") clicked(root, summary);
    const o = new MutationObserver(() => reopen(root));
    o.observe(root, { childList: true, subtree: true });
    observers.push(o);
  };
  document.addEventListener("click", follow, true);
  document.addEventListener("focusin", follow, true);
  model.on("remove", () => {
    document.removeEventListener("click", follow, true);
    document.removeEventListener("focusin", follow, true);
    observers.forEach((o) => o.disconnect());
  });
}
