const CONTROL = 'input, select, textarea, button, [role="slider"]';
const RETRY_MS = 200, RETRIES = 150;  // widgets render after this component: look for 30 s

function hosts(root, cls, depth, found) {
  for (const el of root.querySelectorAll("*")) {
    if (el.classList.contains(cls)) found.push(el);
    if (el.shadowRoot && depth < 8) hosts(el.shadowRoot, cls, depth + 1, found);
  }
  return found;
}

export function render({ model }) {
  const observed = new WeakSet(), observers = [];
  const name = (root, label) => {
    const controls = root.querySelectorAll(CONTROL);
    for (const c of controls) if (c.getAttribute("aria-label") !== label) c.setAttribute("aria-label", label);
    return controls.length > 0;
  };
  const press = (host, on) => {
    for (const b of (host.shadowRoot ?? host).querySelectorAll("button")) {
      const want = host.classList.contains(on) ? "true" : "false";
      if (b.getAttribute("aria-pressed") !== want) b.setAttribute("aria-pressed", want);
    }
  };
  const apply = () => {
    let done = true;
    for (const [cls, on] of Object.entries(model.pressed)) {
      const found = hosts(document, cls, 0, []);
      done = done && found.length > 0;
      for (const host of found) {
        press(host, on);
        if (!observed.has(host)) {  // (its class changes on the host; Bokeh re-renders the button inside)
          observed.add(host);
          const o = new MutationObserver(() => press(host, on));
          o.observe(host, { attributes: true, attributeFilter: ["class"] });
          if (host.shadowRoot) o.observe(host.shadowRoot, { childList: true, subtree: true });
          observers.push(o);
        }
      }
    }
    for (const [cls, label] of Object.entries(model.names)) {
      const found = hosts(document, cls, 0, []);
      done = done && found.length > 0;
      for (const host of found) {
        const root = host.shadowRoot ?? host;
        done = name(root, label) && done;
        if (!observed.has(root)) {  // Bokeh re-renders a widget by replacing its elements
          observed.add(root);
          const o = new MutationObserver(() => name(root, label));
          o.observe(root, { childList: true, subtree: true });
          observers.push(o);
        }
      }
    }
    return done;
  };
  let tries = 0;
  const retry = () => { if (!apply() && ++tries < RETRIES) timer = setTimeout(retry, RETRY_MS); };
  let timer = setTimeout(retry, 0);
  model.on("remove", () => { clearTimeout(timer); observers.forEach((o) => o.disconnect()); });
  const el = document.createElement("span");
  el.className = "kv-a11y";
  return el;
}
