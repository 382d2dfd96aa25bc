"""The static page's player: replays a node's recording (kvviz/export/record.py) in the browser.

`PLAYER_JS` runs once per page. Each recorded node registers its recording (gzip + base64 JSON,
inflated with the browser's DecompressionStream: no library) and a controller; the node's own
Bokeh widgets call `window.kvvizPlayer.act(node, action, value)` through CustomJS callbacks
(`wire`). A state is a branch and an index into it; showing it sets, on the page's own models,
every recorded property whose value differs from what is shown.
"""

from __future__ import annotations

from bokeh.models import CustomJS

from kvviz.export.recipes import Control

PLAYER_JS = r"""
(function () {
  const nodes = {};
  async function inflate(b64) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  function decode(v) {
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.map(decode);
    if ("nd" in v) return v.nd === "f" ? Float64Array.from(v.v, (x) => (x === null ? NaN : x))
      : v.nd === "i" ? Int32Array.from(v.v) : v.v.slice();
    if ("f" in v) return v.f === "inf" ? Infinity : v.f === "-inf" ? -Infinity : NaN;
    if ("map" in v) { const o = {}; for (const k in v.map) o[k] = decode(v.map[k]); return o; }
    return v;
  }
  const CONTROLLERS = {};  // node -> its recipe's controller (kvviz/nodes/<node>/recording.py)
  class Node {
    constructor(name, rec, meta, doc, playButton) {
      Object.assign(this, { name, rec, meta, doc, playButton, shown: null, timer: null, period: 250 });
      this.models = rec.props.map(([id]) => doc.get_model_by_id(id));
      this.reserve = meta.default_reserve; this.freed = false; this.adds = 0;
    }
    go(branch, index) {
      const rows = this.rec.branches[branch];
      if (!rows) return;
      this.branch = branch;
      this.index = index === undefined ? rows.length - 1 : Math.max(0, Math.min(index, rows.length - 1));
      this.show();
    }
    show() {
      const row = this.rec.branches[this.branch][this.index];
      this.applying = true;
      try {
        row.forEach((vi, i) => {
          if (this.shown && this.shown[i] === vi) return;
          const model = this.models[i];
          if (model) model.setv({ [this.rec.props[i][1]]: decode(this.rec.values[vi]) });
        });
      } finally { this.applying = false; }
      this.shown = row;
    }
    last() { return this.rec.branches[this.branch].length - 1; }
    step() { if (this.index < this.last()) { this.index += 1; this.show(); return true; } return false; }
    play(on) {
      const playing = this.timer !== null;
      if (on === undefined) on = !playing;
      if (this.timer !== null) { clearInterval(this.timer); this.timer = null; }
      if (on) {
        if (this.index >= this.last()) { this.index = 0; this.show(); }
        this.timer = setInterval(() => { if (!this.step()) this.play(false); }, this.period);
      }
      if (this.playButton) this.playButton.label = this.timer !== null ? "❚❚ Pause" : "▶ Play";
    }
    act(action, value) {
      if (this.applying) return;  // (a model set by show() echoing back)
      const c = CONTROLLERS[this.name] || {};
      if (action === "rewind") { this.play(false); this.index = 0; this.show(); }
      else if (action === "back") { this.play(false); if (this.index > 0) { this.index -= 1; this.show(); } }
      else if (action === "step") { this.play(false); this.step(); }
      else if (action === "play") this.play();
      else if (action === "speed") { this.period = value; if (this.timer !== null) { this.play(false); this.play(true); } }
      else if (c[action]) { this.play(false); c[action](this, value); }
    }
  }
  window.kvvizPlayer = {
    async register(name, b64, meta, playId, defaultBranch) {
      const rec = await inflate(b64);
      const start = () => {
        const doc = window.Bokeh && Bokeh.documents && Bokeh.documents[0];
        if (!doc) return setTimeout(start, 50);
        const node = new Node(name, rec, meta, doc, playId ? doc.get_model_by_id(playId) : null);
        nodes[name] = node;
        node.go(defaultBranch);
        document.documentElement.dataset[`kvReady${name[0].toUpperCase()}${name.slice(1)}`] = "1";
      };
      start();
    },
    act(name, action, value) { if (nodes[name]) nodes[name].act(action, value); },
    controllers: CONTROLLERS,
    nodes,
  };
})();
"""


def _find(doc, control: Control):
    """The Bokeh model of a control, by kind and label (its title for sliders and inputs)."""
    for model in doc.models:
        kind = type(model).__name__
        if control.kind == "button" and "Button" in kind and getattr(model, "label", None) == control.label:
            return model
        if control.kind == "slider" and "Slider" in kind and getattr(model, "title", None) == control.label:
            return model
        if control.kind == "checkbox" and kind == "Checkbox" and getattr(model, "label", None) == control.label:
            return model
        if control.kind == "select" and kind.endswith("Select") and any(
                control.label in str(o) for o in getattr(model, "options", [])):
            return model
    raise LookupError(f"no {control.kind} labelled {control.label!r} in the page")


def wire(doc, node: str, controls):
    """Attach each control to the player; returns the Play button's model (its label changes)."""
    play = None
    for control in controls:
        model = _find(doc, control)
        call = f"window.kvvizPlayer.act({node!r}, {control.action!r}"
        if control.kind == "button":
            model.js_on_event("button_click", CustomJS(code=call + ")"))
            if control.action == "play":
                play = model
        elif control.kind == "slider":
            model.js_on_change("value", CustomJS(code=call + ", cb_obj.value)"))
        elif control.kind == "checkbox":
            model.js_on_change("active", CustomJS(code=call + ", cb_obj.active)"))
        elif control.kind == "select":
            model.js_on_change("value", CustomJS(code=call + ", Number(cb_obj.value))"))  # (ms per step)
    return play


# Every node's predict-then-run controls need a live engine to answer (kvviz/figures/prediction.py).
PREDICTION_LABELS = ("Predict: ", "Lock in my prediction")
PREDICTION_PLACEHOLDER = "a whole number"


def disable(doc, labels) -> None:
    """Show the controls that need the live engine disabled: inputs by title, buttons by label,
    and every prediction control."""
    for model in doc.models:
        if not hasattr(model, "disabled"):
            continue
        title, label = getattr(model, "title", None), getattr(model, "label", None)
        if (title in labels or label in labels or (isinstance(label, str) and label.startswith(PREDICTION_LABELS))
                or getattr(model, "placeholder", None) == PREDICTION_PLACEHOLDER):
            model.disabled = True
