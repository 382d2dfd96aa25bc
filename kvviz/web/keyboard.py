"""Keyboard shortcuts: space play/pause, → step, ← step back, r reset.

A tiny JSComponent listens for keydown on the document and sends {action, node} to Python.
A key is left alone when a widget already owns it: anything typed into a text box, text area,
select, checkbox or contenteditable; any key on a slider or other ARIA control (→ moves a
focused slider, it does not also step); space (and Enter) on a focused button, which clicks
it and does not also play; and any event a widget has already handled (defaultPrevented). The
event's composed path is checked, so controls inside Panel's shadow roots count too. `node` is the lesson node whose
section covers most of the viewport; when none is found (e.g. the page has not laid out yet)
Python falls back to the node the user last touched. Nothing from the browser is executed:
only known action and node names are acted on.
"""

from __future__ import annotations

from collections.abc import Callable

from panel.custom import JSComponent

ACTIONS = ("play", "step", "back", "reset")

FIND_SECTIONS_JS = """
function sections(root, depth, found) {
  for (const el of root.querySelectorAll("*")) {
    const key = [...el.classList].find((c) => c.startsWith("kv-node-"));
    if (key) { found.push([key.slice(8), el]); continue; }
    if (el.shadowRoot && depth < 6) sections(el.shadowRoot, depth + 1, found);
  }
  return found;
}
"""

_ESM = FIND_SECTIONS_JS + """
const KEYS = {" ": "play", "ArrowRight": "step", "ArrowLeft": "back", "r": "reset", "R": "reset"};
const EDITABLE = new Set(["INPUT", "TEXTAREA", "SELECT"]);
// Controls that use keys themselves (arrows, space, letters), by ARIA role.
const CONTROL_ROLES = new Set(["slider", "spinbutton", "textbox", "searchbox", "combobox", "listbox",
  "option", "checkbox", "radio", "switch", "menuitem", "tab"]);
const BUTTON_KEYS = new Set([" ", "Enter"]);  // what a focused button does itself

function ownedByWidget(event) {
  if (event.defaultPrevented) return true;
  const path = event.composedPath ? event.composedPath() : [event.target];
  return path.some((n) => {
    if (!n || n.nodeType !== 1) return false;
    if (EDITABLE.has(n.tagName) || n.isContentEditable) return true;
    const role = n.getAttribute("role");
    if (CONTROL_ROLES.has(role)) return true;
    return (n.tagName === "BUTTON" || role === "button") && BUTTON_KEYS.has(event.key);
  });
}

function nodeInView() {
  let best = null, bestArea = 0;
  for (const [key, el] of sections(document, 0, [])) {
    const r = el.getBoundingClientRect();
    const h = Math.min(r.bottom, window.innerHeight) - Math.max(r.top, 0);
    if (h > bestArea) { best = key; bestArea = h; }
  }
  return best;
}

export function render({ model }) {
  const onKey = (event) => {
    const action = KEYS[event.key];
    if (!action || event.ctrlKey || event.metaKey || event.altKey || ownedByWidget(event)) return;
    event.preventDefault();  // (space would scroll the page)
    model.send_msg({ action, node: nodeInView() });
  };
  document.addEventListener("keydown", onKey);
  model.on("remove", () => document.removeEventListener("keydown", onKey));
  const el = document.createElement("span");
  el.className = "kv-keyboard";
  el.title = "Keys: space play/pause, right arrow step, left arrow step back, r reset";
  return el;
}
"""


class Keyboard(JSComponent):
    """Sends shortcut keys to `handler(action, node_or_None)`."""

    _esm = _ESM

    def __init__(self, handler: Callable[[str, str | None], None], **params):
        super().__init__(**params)
        self._handler = handler  # a plain attribute: not synced to the browser

    def _handle_msg(self, msg) -> None:
        if not isinstance(msg, dict):
            return
        action, node = msg.get("action"), msg.get("node")
        if action in ACTIONS:
            self._handler(action, node if isinstance(node, str) else None)
