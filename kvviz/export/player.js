// The lesson's player: replays each node's recording of the real engine (kvviz/export/record.py)
// on the page's own Bokeh models, with no server. Each recorded node registers its recording
// (gzip + base64 JSON, inflated with the browser's DecompressionStream) and what its own actions
// do, as data (its recipe's `vars`, `branch` and `actions`: kvviz/nodes/<node>/recipe.py);
// the node's widgets call `act(node, action, value)` through CustomJS callbacks
// (kvviz/export/player.py: wire). No node has JavaScript of its own. A state is a branch and an
// index into it; showing it sets every recorded property whose value differs from what is shown.
//
// The address bar follows the state: each branch's settled end has the live lesson's own link
// (recorded with it), and `at_<node>` names a step before that end. A link opens on its recorded
// state; one that no recording holds is sent to the server (player_live.js).
//
// This file is the player's core: a recording inflated and decoded, a node's `Node` (a state
// shown, transport and Play, its actions dispatched), the address bar, and `window.kvvizPlayer`
// (a node registered, the shortcut keys). kvviz/export/player.py joins the player's other files
// after this one into one script (`PLAYER_JS`), in this order: player_recipe.js (a node's own
// actions run from its recipe; the state a link names), player_live.js (what the server's engine
// answers), player_predict.js (predictions resolved from the recorded outcomes) and player_view.js
// (Play drawn only on screen), which add the rest of `Node`'s methods through `_internal` (below);
// player_handin.js (the hand-in, added to `window.kvvizPlayer`); player_scroll.js (a `#<node>`
// link's node shown).
(function () {
  "use strict";
  const nodes = {};
  const ORDER = []; // node names in page order (registered in it; their recordings inflate in any order)
  // where a hand-in is sent (and its box's HTML, shown under an answered prediction too); where the
  // server's engine answers what no recording holds
  const config = { handin: null, handinBox: null, frames: null, afterPaint: null };
  let touched = null; // the node last acted on (the keyboard's, when none is in view)

  async function inflate(b64) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function decode(v) {
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.map(decode);
    if ("nd" in v) {
      if (v.nd === "f") return Float64Array.from(v.v, (x) => (x === null ? NaN : x));
      return v.nd === "i" ? Int32Array.from(v.v) : v.v.slice();
    }
    if ("raw" in v) return v.raw; // (a value read off the page's own model: kept as it was)
    if ("f" in v) return v.f === "inf" ? Infinity : v.f === "-inf" ? -Infinity : NaN;
    if ("map" in v) {
      const o = {};
      for (const k in v.map) o[k] = decode(v.map[k]);
      return o;
    }
    return v;
  }

  // A query's parameters among `keys`, as one comparable string: each key's values in order,
  // the keys sorted (a hand-written link may order them differently).
  function canonical(search, keys) {
    const q = new URLSearchParams(search);
    return keys.filter((k) => q.has(k)).sort()
      .map((k) => q.getAll(k).map((v) => `${k}=${v}`).join("&")).join("&");
  }

  // A model's view on the page (null before BokehJS has drawn it).
  function viewOf(model) {
    return window.Bokeh && Bokeh.index && Bokeh.index.find_one ? Bokeh.index.find_one(model) : null;
  }

  // Showing or hiding a section: its element's display, where the model is shown already (setting
  // a Panel FlexBox's `visible` renders its whole subtree again: 100-140 ms for one prediction row).
  function setVisible(model, on) {
    const view = viewOf(model);
    if (view && view.el && (model.visible || !on)) {
      view.el.style.display = on ? "" : "none";
      return;
    }
    model.setv({ visible: on });
  }

  // A button enabled or disabled: on its own <button>, the model set to match without a change
  // event (BokehJS renders a button again and lays the page out when its `disabled` changes: 9-15 ms
  // of a Free R2 or a Reset, the most of either).
  function setDisabled(model, on) {
    const view = viewOf(model);
    if (!view || !view.button_el) return false;
    model.setv({ disabled: on }, { silent: true });
    view.button_el.disabled = on;
    return true;
  }

  // A button's text changed in place (Play's "▶ Play" / "❚❚ Pause"): BokehJS builds its label's
  // view again and lays the page out when `label` changes (9-20 ms); its models are set to match
  // without a change event, so a later render draws the same text.
  function setLabel(model, text) {
    const view = viewOf(model);
    const label = view && view.label_view;
    if (model.label === text) return;
    if (!label || !label.el || !label.model || typeof model.label !== "string") {
      model.label = text;
      return;
    }
    label.model.setv({ content: text }, { silent: true });
    model.setv({ label: text }, { silent: true });
    label.el.textContent = text;
  }


  // Work the student need not see in the frame that shows a new state (a select's choices, a
  // figure's size, the Play button's label: each lays out or draws a widget again, ~25 ms): done
  // just after that frame is painted.
  function afterPaint(fn) {
    requestAnimationFrame(() => setTimeout(fn, 0));
  }

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  }

  // Every node's link together (with `at_<node>` for a step before a branch's end when `at`).
  function currentQuery(at) {
    const q = new URLSearchParams();
    for (const n of ORDER.map((name) => nodes[name]).filter(Boolean)) {
      for (const [k, v] of new URLSearchParams(n.link())) q.append(k, v);
      if (at && n.index !== n.last()) q.set(`at_${n.name}`, String(n.index));
    }
    return q;
  }

  let urlTimer = null;
  function writeUrl() {
    // (at most twice a second: browsers refuse a flood of history updates during Play)
    if (urlTimer !== null) return;
    if (location.protocol === "about:") return; // (a notebook's frame, about:srcdoc: no address of its own to keep)
    urlTimer = setTimeout(() => {
      urlTimer = null;
      const node = new URLSearchParams(location.search).get("node");
      const q = currentQuery(true);
      if (node) q.set("node", node);
      const s = q.toString();
      if (`?${s}` !== location.search && !(s === "" && location.search === "")) {
        history.replaceState(history.state, "", s ? `?${s}` : location.pathname);
      }
    }, 500);
  }

  class Node {
    constructor(name, rec, meta, doc, ids) {
      Object.assign(this, { name, rec, meta, doc, ids, shown: null, timer: null, hidden: false, stale: false,
                           period: 250, lives: 0, asked: 0, echoes: new Set() });
      this.models = rec.props.map(([id]) => doc.get_model_by_id(id));
      this.playButton = ids.play ? doc.get_model_by_id(ids.play) : null;
      this.vars = { ...(meta.vars || {}) }; // the player's variables, which name the branch shown
    }

    go(branch, index) {
      const rows = this.rec.branches[branch];
      if (!rows) return;
      this.branch = branch;
      // (what the branch's state holds of the variables: an action that did nothing there leaves them)
      Object.assign(this.vars, ((this.meta.predict || {}).held || {})[branch] || {});
      this.index = index === undefined ? rows.length - 1 : Math.max(0, Math.min(index, rows.length - 1));
      this.show();
      const checks = window.kvvizPlayer && window.kvvizPlayer.checks; // (checks.js: Explain it back)
      if (checks) checks.refresh();
    }

    // The properties set after the new state is painted: the pictures (a figure's data, ranges and
    // size: the numbers come first, as live), a select's choices with its value (drawn again: a
    // frame's work), and a pane marked so in Python (config.afterPaint: a folded "As text").
    later(i) {
      if (!this.lateProps || this.lateProps.n !== this.rec.props.length) { // (a live branch adds some)
        const selects = new Set(this.rec.props.filter(([, a]) => a === "options").map(([id]) => id));
        const drawnLater = (m, a) => m && ((config.afterPaint && (m.css_classes || []).includes(config.afterPaint))
          || (m.type === "Range1d" && (a === "start" || a === "end"))); // (a marked pane; a figure's range)
        this.lateProps = new Set(this.rec.props.map(([id, a], k) => (
          a === "height" || a === "width" || a === "data" || (selects.has(id) && (a === "options" || a === "value"))
          || drawnLater(this.models[k], a) ? k : -1)));
        this.lateProps.n = this.rec.props.length;
      }
      return this.lateProps.has(i);
    }

    show() {
      this.stale = false;
      const row = this.rec.branches[this.branch][this.index];
      const resize = []; // (set after the numbers and pictures are painted: `later`)
      this.applying = true;
      try {
        if (this.said) this.unsay(row);
        this.sizes = this.sizes || {}; // prop index -> the value applied
        row.forEach((vi, i) => {
          const attr = this.rec.props[i][1];
          if (this.later(i)) {
            // (before anything is shown, the page holds its default branch's settled end: `initial`)
            const now = this.sizes[i] ?? (this.shown ? this.shown[i] : this.initial && this.initial[i]);
            if (this.models[i] && now !== vi) resize.push(i);
            return;
          }
          if (this.shown && this.shown[i] === vi) return;
          const model = this.models[i];
          if (!model) return;
          if (attr === "visible") setVisible(model, Boolean(this.rec.values[vi]));
          else if (attr === "disabled" && setDisabled(model, Boolean(this.rec.values[vi]))) return;
          else {
            const v = decode(this.rec.values[vi]);
            if (attr === "value" && typeof v === "string") {
              // (the student's own text in the box is kept, as live: no suggestion written over it)
              if (this.draft && !this.echoes.has(this.draft) && "value_input" in model.properties) return;
              this.echoes.add(v); // (a box's text set here, not typed)
            }
            model.setv({ [attr]: v });
          }
        });
      } finally {
        this.applying = false;
      }
      this.shown = row;
      if (resize.length) this.resize(resize);
      this.sayPlaying();
      writeUrl();
    }

    // What the live lesson's transport says beside its buttons (Step at the run's end, Step back at
    // its start, Rewind: kvviz/state/node.py SAYS, in the page's metadata as the line's text);
    // the next state shown takes it back (`unsay`), as the live lesson's next action does.
    say(what) {
      const line = this.ids.said ? this.doc.get_model_by_id(this.ids.said) : null;
      const text = (this.meta.says || {})[what];
      if (!line || text === undefined) return;
      this.applying = true;
      try { line.text = text; } finally { this.applying = false; }
      this.said = line;
    }

    unsay(row) { // (inside show(): the line as the state shown holds it)
      const line = this.said;
      this.said = null;
      const k = this.rec.props.findIndex(([id, attr]) => id === line.id && attr === "text");
      line.text = k >= 0 ? decode(this.rec.values[row[k]]) : "";
    }

    // The step counter says what the player is doing (its states were recorded standing still).
    sayPlaying() {
      const counter = this.ids.counter ? this.doc.get_model_by_id(this.ids.counter) : null;
      if (!counter || typeof counter.text !== "string") return;
      const now = this.timer !== null ? "playing" : this.index >= this.last() ? "idle" : "paused";
      const text = counter.text.replace(/· (?:playing|idle|paused)(&lt;|<)/, `· ${now}$1`);
      if (text !== counter.text) {
        this.applying = true;
        try { counter.text = text; } finally { this.applying = false; }
      }
    }

    // A figure's height or width lays out the whole page again (~100 ms for node 03's tree), a
    // select's new choices draw it again: set in the frame after the new state is painted, to the
    // state shown by then (a select's choices before its value).
    resize(indices) {
      const order = (i) => (this.rec.props[i][1] === "value" ? 1 : 0);
      afterPaint(() => {
        this.applying = true;
        try {
          for (const i of [...indices].sort((a, b) => order(a) - order(b))) {
            const vi = this.shown[i];
            if (this.sizes[i] === vi) continue;
            this.sizes[i] = vi;
            this.models[i].setv({ [this.rec.props[i][1]]: decode(this.rec.values[vi]) });
          }
        } finally {
          this.applying = false;
        }
      });
    }

    last() { return this.rec.branches[this.branch].length - 1; }
    link() { return this.rec.links ? this.rec.links[this.branch] || "" : ""; }

    step() {
      if (this.index < this.last()) {
        this.index += 1;
        if (this.timer !== null && this.hidden) { // (Play, scrolled away: drawn when seen: player_view.js)
          this.stale = true;
          writeUrl();
        } else this.show();
        return true;
      }
      return false;
    }

    play(on) {
      const playing = this.timer !== null;
      if (on === undefined) on = !playing;
      if (this.timer !== null) {
        clearInterval(this.timer);
        this.timer = null;
        if (this.stale) this.show(); // (the step it stopped at, drawn)
      }
      if (on) {
        if (this.index >= this.last()) {
          this.index = 0;
          this.show();
        }
        this.timer = setInterval(() => { if (!this.step()) { this.play(false); this.say("idle"); } },
                                 this.period);
      }
      const button = this.playButton;
      if (button) afterPaint(() => setLabel(button, this.timer !== null ? "❚❚ Pause" : "▶ Play"));
      this.sayPlaying();
    }

    act(action, value) {
      if (this.applying) return; // (a model set by show() echoing back)
      const c = this.meta.actions || {};
      const onLive = this.branch && this.branch.startsWith("live");
      if (action === "rewind") { this.play(false); this.index = 0; this.untaken(); this.show(); this.say("rewound"); }
      else if (action === "back") {
        this.play(false);
        if (this.index > 0) { this.index -= 1; this.untaken(); this.show(); } else this.say("start");
      } else if (action === "step") { this.play(false); if (!this.step()) this.say("idle"); }
      else if (action === "play") this.play();
      else if (action === "speed") {
        this.period = value;
        if (this.timer !== null) { this.play(false); this.play(true); }
      } else if (action === "do") this.doLive(value);
      else if (action === "typed") this.typed(value);
      else if (action === "draft") this.draft = typeof value === "string" ? value : "";
      else if (action === "predict_typing") this.typing = value;
      else if (action === "predict") this.predict(value === null ? this.typing : value);
      else if (c[action] && onLive && action !== "reset" && (this.meta.controls || {})[action]) {
        // (a state computed live: the server's engine takes this action from it too; one that plays
        // in the live lesson, as Add request does, at the step shown, and played from there, as live)
        const at = c[action].play ? { to: this.rec.steps[this.branch][this.index], after: true, play: true } : {};
        this.live({ act: this.meta.controls[action], value, ...at });
      } else if (c[action] && this.commitsDraft(action)) {
        // (the box holds the student's own text: that is what this button adds)
      } else if (c[action] && c[action].count && this.index < this.last() && config.frames
                 && (this.meta.controls || {})[action]) {
        // (a request added at a step before the run's end: no recording holds that, as the live
        // lesson adds it right there; the server's engine runs it from this step)
        this.live({ act: this.meta.controls[action], to: this.rec.steps[this.branch][this.index], after: true,
                    play: true });
      } else if (c[action]) {
        this.play(false);
        const before = this.branch;
        this.run(c[action], value);
        if (action === "reset") { this.pending = null; this.choose(null); this.status(""); }
        else if (this.branch !== before) this.resolve();
      }
    }
  }

  window.kvvizPlayer = {
    configure(options) { Object.assign(config, options); },
    async register(name, b64, meta, ids, defaultBranch) {
      ORDER.push(name);
      const rec = await inflate(b64);
      const start = () => {
        const doc = window.Bokeh && Bokeh.documents && Bokeh.documents[0];
        if (!doc || doc.is_idle === false) return setTimeout(start, 50); // (its views drawn first)
        const node = new Node(name, rec, meta, doc, ids || {});
        node.initial = (rec.branches[defaultBranch] || []).at(-1);
        nodes[name] = node;
        node.watchView();
        const wanted = node.fromLink(location.search);
        if (wanted) {
          node.go(wanted.branch, wanted.index);
          node.restoreVars(wanted.branch);
        } else {
          node.go(defaultBranch);
          if (canonical(location.search, meta.params || []) !== "") { // (not recorded: the server runs it)
            const mine = new URLSearchParams();
            for (const [k, v] of new URLSearchParams(location.search)) if ((meta.params || []).includes(k)) mine.append(k, v);
            const at = new URLSearchParams(location.search).get(`at_${name}`);
            node.live({ base: mine.toString(), at: at !== null && /^\d{1,5}$/.test(at) ? Number(at) : undefined });
          }
        }
        document.documentElement.dataset[`kvReady${name[0].toUpperCase()}${name.slice(1)}`] = "1";
      };
      start();
    },
    act(name, action, value) {
      if (!nodes[name]) return;
      touched = name;
      nodes[name].act(action, value);
    },
    // A shortcut key (web/keyboard.py: KEYS) for the node in view, else the last touched, as its buttons.
    key(action, inView) {
      if (this.classroom && this.classroom.isPaused()) return; // (eyes on the teacher)
      const name = ORDER.length === 1 ? ORDER[0] : nodes[inView] ? inView : touched || ORDER[0];
      if (nodes[name]) nodes[name].act(action); // (an action the node lacks does nothing)
    },
    // The live lesson's link for every node's state now (Explain it back opens live with it).
    query() { return currentQuery(false).toString(); },
    // Every prediction resolved in this page, from the recorded outcomes.
    predictions() { return Object.values(nodes).flatMap((n) => n.predictions || []); },
    nodes,
    config,
    decode,
    // What the player's other files (player_*.js, joined after this one) share with this one: they
    // add `Node`'s methods (and the hand-in to this object) with these, in closures of their own.
    _internal: { Node, config, decode, canonical, currentQuery, setVisible, escapeHtml },
  };
})();
