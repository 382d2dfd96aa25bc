// The keys and their actions come from Python (kvviz/web/keyboard.py: KEYS).
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
    const keys = model.keys || {};
    const action = Object.prototype.hasOwnProperty.call(keys, event.key) ? keys[event.key] : null;
    if (!action || event.ctrlKey || event.metaKey || event.altKey || ownedByWidget(event)) return;
    event.preventDefault();  // (space would scroll the page)
    if (model.played) {  // (a played page: its player acts, nothing is sent)
      if (window.kvvizPlayer) window.kvvizPlayer.key(action, nodeInView());
    } else model.send_msg({ action, node: nodeInView() });
  };
  document.addEventListener("keydown", onKey);
  model.on("remove", () => document.removeEventListener("keydown", onKey));
  const el = document.createElement("span");
  el.className = "kv-keyboard";
  el.title = "Keys: space play/pause, right arrow step, left arrow step back, r reset";
  return el;
}
