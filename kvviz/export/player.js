// The lesson's player: replays each node's recording of the real engine (kvviz/export/record.py)
// on the page's own Bokeh models, with no server. Each recorded node registers its recording
// (gzip + base64 JSON, inflated with the browser's DecompressionStream) and what its own actions
// do, as data (its recipe's `vars`, `branch` and `actions`: kvviz/nodes/<node>/recording.py);
// the node's widgets call `act(node, action, value)` through CustomJS callbacks
// (kvviz/export/player.py: wire). No node has JavaScript of its own. A state is a branch and an
// index into it; showing it sets every recorded property whose value differs from what is shown.
//
// The address bar follows the state: each branch's settled end has the live lesson's own link
// (recorded with it), and `at_<node>` names a step before that end. A link opens on its recorded
// state. A link, a typed prompt or an action that no recording holds is sent to the server
// (`/lesson-live`, kvviz/serve/live.py), whose engine runs it and answers with one more branch,
// recorded the same way: the page plays it like the others, and says it was computed live. A
// "slow down" (429) is shown in the server's words, what was typed stays in its box, and nothing
// is sent again until the answer's Retry-After has passed.
(function () {
  "use strict";
  const nodes = {};
  const ORDER = []; // node names in page order (registered in it; their recordings inflate in any order)
  // where a hand-in is sent (and its box's HTML, shown under an answered prediction too); where the
  // server's engine answers what no recording holds
  const config = { handin: null, handinBox: null, frames: null };
  let touched = null; // the node last acted on (the keyboard's, when none is in view)
  const KEEP_LIVE = 4; // branches computed live kept per node (Step back and Play replay them)
  // After the server says "slow down" (429: this address asked faster than it answers), nothing is
  // sent until its Retry-After has passed: the page says the server's sentence again instead (one
  // limit per address, so one for the whole page). Nothing is ever retried by itself.
  const slowDown = { until: 0, said: "" };

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

  // Showing or hiding a section: its element's display, where the model is shown already (setting
  // a Panel FlexBox's `visible` renders its whole subtree again: 100-140 ms for one prediction row).
  function setVisible(model, on) {
    const view = window.Bokeh && Bokeh.index && Bokeh.index.find_one ? Bokeh.index.find_one(model) : null;
    if (view && view.el && (model.visible || !on)) {
      view.el.style.display = on ? "" : "none";
      return;
    }
    model.setv({ visible: on });
  }

  // The roster's dots (kvviz/export/classroom.js): a prediction locked in or resolved.
  function madePrediction() {
    const c = window.kvvizPlayer && window.kvvizPlayer.classroom;
    if (c) c.changed();
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
      Object.assign(this, { name, rec, meta, doc, ids, shown: null, timer: null, period: 250, lives: 0, asked: 0,
                           echoes: new Set() });
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

    show() {
      const row = this.rec.branches[this.branch][this.index];
      const resize = []; // (a figure's new size: set after the numbers and pictures are painted)
      this.applying = true;
      try {
        this.sizes = this.sizes || {}; // prop index -> the size value applied
        row.forEach((vi, i) => {
          const attr = this.rec.props[i][1];
          if (attr === "height" || attr === "width") {
            // (before anything is shown, the page holds its default branch's settled end: `initial`)
            const now = this.sizes[i] ?? (this.shown ? this.shown[i] : this.initial && this.initial[i]);
            if (this.models[i] && now !== vi) resize.push(i);
            return;
          }
          if (this.shown && this.shown[i] === vi) return;
          const model = this.models[i];
          if (!model) return;
          if (attr === "visible") setVisible(model, Boolean(this.rec.values[vi]));
          else {
            const v = decode(this.rec.values[vi]);
            if (attr === "value" && typeof v === "string") this.echoes.add(v); // (a box's text set here, not typed)
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

    // A figure's height or width lays out the whole page again (~100 ms for node 03's tree):
    // set in the frame after the new state is painted, to the size of the state shown by then.
    resize(indices) {
      requestAnimationFrame(() => setTimeout(() => {
        this.applying = true;
        try {
          for (const i of indices) {
            const vi = this.shown[i];
            if (this.sizes[i] === vi) continue;
            this.sizes[i] = vi;
            this.models[i].setv({ [this.rec.props[i][1]]: decode(this.rec.values[vi]) });
          }
        } finally {
          this.applying = false;
        }
      }, 0));
    }

    last() { return this.rec.branches[this.branch].length - 1; }
    link() { return this.rec.links ? this.rec.links[this.branch] || "" : ""; }

    step() {
      if (this.index < this.last()) {
        this.index += 1;
        this.show();
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
      }
      if (on) {
        if (this.index >= this.last()) {
          this.index = 0;
          this.show();
        }
        this.timer = setInterval(() => { if (!this.step()) this.play(false); }, this.period);
      }
      if (this.playButton) this.playButton.label = this.timer !== null ? "❚❚ Pause" : "▶ Play";
      this.sayPlaying();
    }

    act(action, value) {
      if (this.applying) return; // (a model set by show() echoing back)
      const c = this.meta.actions || {};
      const onLive = this.branch && this.branch.startsWith("live");
      if (action === "rewind") { this.play(false); this.index = 0; this.show(); }
      else if (action === "back") { this.play(false); if (this.index > 0) { this.index -= 1; this.show(); } }
      else if (action === "step") { this.play(false); this.step(); }
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
        // (a state computed live: the server's engine takes this action from it too)
        this.live({ act: this.meta.controls[action], value });
      } else if (c[action] && this.commitsDraft(action)) {
        // (the box holds the student's own text: that is what this button adds)
      } else if (c[action] && c[action].count && this.index < this.last() && config.frames
                 && (this.meta.controls || {})[action]) {
        // (a request added at a step before the run's end: no recording holds that, as the live
        // lesson adds it right there; the server's engine runs it from this step)
        this.live({ act: this.meta.controls[action], to: this.rec.steps[this.branch][this.index], after: true });
      } else if (c[action]) {
        this.play(false);
        const before = this.branch;
        this.run(c[action], value);
        if (action === "reset") { this.pending = null; this.choose(null); this.status(""); }
        else if (this.branch !== before) this.resolve();
      }
    }

    // -- a node's own actions, as its recipe declares them (kvviz/nodes/recipe.py: Effect) --
    branchOf(vars) {
      return (this.meta.branch || "").replace(/\{(\w+)\}/g, (_m, k) => String(vars[k]));
    }

    run(effect, value) {
      const v = this.vars;
      const was = this.branchOf(v);
      if (effect.reset) Object.assign(v, this.meta.vars || {});
      for (const [k, x] of Object.entries(effect.set || {})) {
        const given = x === "$value" ? value : x;
        v[k] = typeof given === "boolean" ? Number(given) : given;
      }
      let at;
      if (effect.count) {
        if (v[effect.count] >= effect.most) return;
        const before = (this.rec.steps[this.branchOf(v)] || [0]).at(-1);
        v[effect.count] += 1;
        const steps = this.rec.steps[this.branchOf(v)] || [];
        const first = steps.findIndex((s) => s > before); // (the new request's first step, as live)
        at = first < 0 ? steps.length - 1 : first;
      }
      if (effect.replay) at = 0;
      if (!effect.count && !effect.replay && !effect.reset && this.branchOf(v) === was && this.branch === was
          && this.taken(effect)) return; // (done already in the state shown: nothing changes, as live)
      this.go(this.branchOf(v), at);
      if (effect.play || effect.replay) this.play(true);
    }

    // Whether the action `effect` sets was taken already in the state shown: at or after the step it
    // was taken at in this branch, the end of the branch it was taken from (its variables at their
    // defaults). Before that step the live lesson runs the node to its end and takes it there.
    taken(effect) {
      const before = { ...this.vars };
      for (const k of Object.keys(effect.set || {})) before[k] = (this.meta.vars || {})[k];
      const from = (this.rec.steps[this.branchOf(before)] || []).at(-1);
      return from !== undefined && this.rec.steps[this.branch][this.index] >= from;
    }

    // The variables a recorded branch's name holds (a link opened on it): read by its template.
    restoreVars(branch) {
      const names = [];
      const pattern = (this.meta.branch || "").replace(/[.*+?^$()|[\]\\]/g, "\\$&")
        .replace(/\{(\w+)\}/g, (_m, k) => { names.push(k); return "(.+?)"; });
      const m = new RegExp(`^${pattern}$`).exec(branch);
      if (!m) return;
      names.forEach((k, i) => { this.vars[k] = /^\d+$/.test(m[i + 1]) ? Number(m[i + 1]) : m[i + 1]; });
    }

    // -- predict, then run: resolved from the recorded outcome (kvviz/state/predict.py's rules) --
    // The panel's line (and `below` it: HTML of the page's own, the hand-in box under a verdict).
    status(text, cls, below) {
      const model = this.ids.status ? this.doc.get_model_by_id(this.ids.status) : null;
      if (!model) return;
      const html = text ? `<div class="kv-predict-note ${cls || ""}" role="status" data-node="${escapeHtml(this.name)}">`
        + `${escapeHtml(text)}</div>${below || ""}` : '<div class="kv-predict-note kv-empty"></div>';
      model.text = escapeHtml(html);
      const panel = this.ids.panel ? this.doc.get_model_by_id(this.ids.panel) : null;
      if (panel && text) setVisible(panel, true);
    }

    predict(typed) {
      const p = this.meta.predict || {};
      const q = (p.questions || {})[this.branch];
      if (!q) { this.status("There is nothing to predict right now: press Reset to try again.", "kv-wrong"); return; }
      const text = String(typed === undefined || typed === null ? "" : typed).trim();
      let taken = null;
      if (q.choices.length) {
        if (q.choices.includes(text)) taken = text;
        else { this.status(`Choose one of: ${q.choices.join(", ")}.`, "kv-wrong"); return; }
      } else if (/^\d{1,4}$/.test(text)) taken = String(Number(text));
      else { this.status("Type a whole number (up to 4 digits), then lock it in.", "kv-wrong"); return; }
      this.pending = { question: q.text, predicted: taken };
      this.choose(taken);
      madePrediction();
      this.status(`Locked in: ${taken}. Now use ${q.action} and see what the engine does.`);
    }

    // The choice locked in, shown pressed (its button's class: kvviz/controls/prediction.py's CHOSEN), or none.
    choose(taken) {
      const cls = (this.meta.predict || {}).chosen;
      for (const [choice, id] of Object.entries(this.ids.choices || {})) {
        const model = cls ? this.doc.get_model_by_id(id) : null;
        if (!model) continue;
        const rest = model.css_classes.filter((c) => c !== cls);
        const want = choice === taken ? [...rest, cls] : rest;
        if (want.length !== model.css_classes.length) model.css_classes = want;
      }
    }

    // A new branch shown: the pending prediction meets its recorded outcome, or, when the question
    // asked there is another (a slider rewrote it), it is dropped, in the live page's words.
    resolve() {
      const p = this.meta.predict || {};
      const found = (p.outcomes || {})[this.branch];
      if (!this.pending) return;
      if (!found) {
        const q = (p.questions || {})[this.branch];
        if (q === undefined || (q && q.text === this.pending.question)) return; // (unknown here, or the same)
        const was = this.pending.predicted;
        this.pending = null;
        this.choose(null);
        this.status(String(p.cleared || "").replace("{predicted}", was), "kv-wrong");
        return;
      }
      const right = this.pending.predicted === found.outcome;
      const entry = { node: this.name, question: this.pending.question, predicted: this.pending.predicted,
                      outcome: found.outcome, right, why: found.why, recorded: true };
      (this.predictions = this.predictions || []).push(entry);
      this.pending = null;
      madePrediction();
      this.choose(null);
      const said = `You predicted ${entry.predicted}; the engine: ${entry.outcome}.`;
      const why = found.why ? `: ${found.why}` : ".";
      this.status(`${said} ${right ? "Right" : "Not this time"}${why}`, right ? "kv-right" : "kv-wrong",
                  config.handin && config.handinBox ? config.handinBox : "");
    }

    // The state a link names: its recorded branch (and step), or null when no recording holds it.
    fromLink(search) {
      const keys = this.meta.params || [];
      const want = canonical(search, keys);
      for (const branch of Object.keys(this.rec.branches)) {
        if (canonical(this.rec.links[branch] || "", keys) === want) {
          const at = new URLSearchParams(search).get(`at_${this.name}`);
          return { branch, index: at !== null && /^\d{1,5}$/.test(at) ? Number(at) : undefined };
        }
      }
      return null;
    }

    // A prompt typed into the node's box (committed: Enter, or its button): no recording holds
    // it, so the server runs it, added as the link's last request (meta.typed says which parameter
    // carries it; a link without step gaps runs each request to its end first, which is what every
    // recorded branch did).
    typed(text) {
      const t = this.meta.typed;
      if (!t || typeof text !== "string" || !text.trim() || this.echoes.has(text)) return;
      this.draft = "";
      this.live({ extra: `${t.param}=${encodeURIComponent(t.prefix + text.trim().slice(0, 200))}`, drop: t.drop || [],
                  after: true, typed: text });
    }

    // A control that needs the engine (Release oldest, Fill the pool, a select): the server does it.
    doLive(what) {
      if (!what || typeof what.id !== "string") return;
      if (what.value !== undefined && this.isShown(what.model, "value", what.value)) return; // (an echo of show())
      if (this.commitsDraft(what.id)) return;
      this.live({ act: what.id, value: what.value, after: what.value === undefined });
    }

    // Whether the state shown holds `value` for this model's property (a select that BokehJS
    // sets again when its options change is not the student choosing).
    isShown(id, attr, value) {
      if (!this.shown || !id) return false;
      const i = this.rec.props.findIndex(([pid, a]) => pid === id && a === attr);
      return i >= 0 && i < this.shown.length && decode(this.rec.values[this.shown[i]]) === value;
    }

    // The button that commits the node's box (meta.typed.button: an action or a control's id), pressed
    // while the box holds text the student typed (not yet sent, not a text the page set): that
    // text is run, as Enter would. Returns whether it was.
    commitsDraft(actionOrLabel) {
      const t = this.meta.typed;
      const draft = typeof this.draft === "string" ? this.draft.trim() : "";
      if (!t || !t.button || actionOrLabel !== t.button || !draft || this.echoes.has(this.draft)) return false;
      this.typed(this.draft);
      return true;
    }

    // The properties this page holds beyond the recorded ones (from earlier live branches): the
    // server reads them too, so its branch says their value in every state.
    extras() {
      if (this.recorded === undefined) return []; // (none yet)
      const places = new Map((this.meta.models || []).map((id, i) => [id, i]));
      return this.rec.props.slice(this.recorded).map(([id, attr]) => `${places.get(id)}.${attr}`)
        .filter((x) => !x.startsWith("undefined"));
    }

    // What no recording holds, run by the server's engine from this node's link (`base`, default:
    // the state shown; less `drop`, plus `extra`, then the action `act` with `value`): its answer
    // is one more branch, shown at its end. `after`: the action comes after the end of the branch
    // shown, whose states before it the new branch shares (the server records only the rest).
    // Says why when it can't; the recording keeps playing.
    async live(what) {
      this.busy = (this.busy || 0) + 1; // (a request in flight: tests and benchmarks wait on it)
      try { await this.ask(what || {}); } finally { this.busy -= 1; }
    }

    async ask({ base, extra, drop, act, value, at, after, to, typed }) {
      this.play(false);
      const pane = this.ids.live ? this.doc.get_model_by_id(this.ids.live) : null;
      const say = (html) => { if (pane) { pane.text = escapeHtml(html); pane.visible = true; } };
      // (not answered: what the student typed stays theirs, in the box and for its button)
      const keepTyped = () => { if (typeof typed === "string" && !this.draft) this.draft = typed; };
      if (Date.now() < slowDown.until) { // (asked to slow down a moment ago: this is not sent)
        keepTyped();
        say(`<p class="kv-live-note kv-live-error kv-slow-down" role="alert">${escapeHtml(slowDown.said)}</p>`);
        return;
      }
      if (!config.frames) {
        say(`<p class="kv-live-note" role="status">This needs the live lesson, which this copy has no address
             for: run <code>make lesson</code> to use your own prompts.</p>`);
        return;
      }
      const q = new URLSearchParams(base === undefined ? this.link() : base);
      for (const k of drop || []) q.delete(k);
      for (const [k, v] of new URLSearchParams(extra || "")) q.append(k, v);
      q.set("node", this.name);
      if (act) q.set("act", act);
      if (act && value !== undefined && value !== null) q.set("value", String(value));
      for (const x of this.extras()) q.append("extra", x);
      const shared = after && base === undefined && this.branch
        ? { rows: this.rec.branches[this.branch], steps: this.rec.steps[this.branch] } : null;
      if (shared) q.set("from", String(to !== undefined ? to : shared.steps[shared.steps.length - 1]));
      if (to !== undefined) q.set("to", String(to)); // (the action is taken at that step, not at the end)
      const ticket = (this.asked += 1);
      say(`<p class="kv-live-note" role="status">Running this on the server's engine…</p>`);
      let data = null;
      try {
        const r = await fetch(`${config.frames}?${q}`, { cache: "no-store" });
        data = await r.json().catch(() => null);
        if (r.status === 429) { // (this address asks faster than the server answers: hold off)
          const wait = Number(r.headers.get("Retry-After")) || Number(data && data.retry_after_s) || 1;
          slowDown.until = Date.now() + 1000 * Math.min(Math.max(wait, 1), 60);
          slowDown.said = data && data.message ? data.message
            : "You are sending questions faster than the server can answer: wait a second and try again.";
          throw Object.assign(new Error(slowDown.said), { answered: true, slow: true });
        }
        if (!r.ok || !data || !data.ok) {
          const why = data && data.message ? data.message
            : r.status === 503 ? "the server is busy right now" : `the server answered ${r.status}`;
          throw Object.assign(new Error(why), { answered: Boolean(data && data.message) });
        }
      } catch (err) {
        keepTyped();
        if (ticket !== this.asked) return;
        say(err.answered
          ? `<p class="kv-live-note kv-live-error${err.slow ? " kv-slow-down" : ""}" role="alert">${escapeHtml(err.message)}</p>`
          : `<p class="kv-live-note kv-live-error" role="alert">The live engine could not be reached
             (${escapeHtml(err.message || err)}): the recording above still plays; try again in a moment.</p>`);
        return;
      }
      if (ticket !== this.asked) return; // (a later request took its place)
      this.go(this.addBranch(data, shared), at);
      const notices = Array.isArray(data.notices) ? data.notices.filter((n) => typeof n === "string") : [];
      const about = notices.length ? `<div class="kv-url-notice" role="alert"><b>About this link:</b><ul>`
        + notices.slice(0, 8).map((n) => `<li>${escapeHtml(n)}</li>`).join("") + "</ul></div>" : "";
      say(`${about}<p class="kv-live-note" role="status"><b>● Live:</b> computed just now by this server's engine, from
           the state you were at. Step back, Play and Rewind replay it here.</p>`);
    }

    // A branch from the server (kvviz/serve/live.py) added to this node's recording: its values
    // appended, its properties beyond the recorded ones added to every state (each held, in every
    // state recorded so far, the value it has on the page now). Returns its key.
    addBranch(data, shared) {
      const rec = this.rec;
      if (this.recorded === undefined) this.recorded = rec.props.length;
      const base = rec.values.length;
      for (const v of data.values) rec.values.push(v);
      const column = []; // the answer's column -> this page's property
      for (let j = 0; j < data.n; j += 1) column.push(j);
      for (const [place, attr] of data.props) {
        const id = (this.meta.models || [])[place];
        let i = rec.props.findIndex(([pid, a]) => pid === id && a === attr);
        if (i < 0) {
          const model = id ? this.doc.get_model_by_id(id) : null;
          i = rec.props.length;
          rec.props.push([id, attr]);
          this.models.push(model);
          rec.values.push({ raw: model ? model[attr] : null });
          const held = rec.values.length - 1;
          const rowsSeen = new Set();
          for (const rows of Object.values(rec.branches)) {
            for (const row of rows) if (!rowsSeen.has(row)) { rowsSeen.add(row); row.push(held); }
          }
          if (this.shown && !rowsSeen.has(this.shown)) this.shown.push(held);
        }
        column.push(i);
      }
      const width = rec.props.length;
      const shown = this.shown ? this.shown : new Array(width).fill(0);
      const rows = data.rows.map((r) => {
        const row = shown.slice(); // (what the answer leaves out: as shown)
        r.forEach((vi, j) => { row[column[j]] = base + vi; });
        return row;
      });
      // the states before the action: the page's own (the branch it came from), as they were
      const before = [];
      const steps = [];
      if (shared && data.from > 0) {
        shared.rows.forEach((row, i) => {
          if (shared.steps[i] >= data.from) return;
          before.push(row.length < width ? row.concat(shown.slice(row.length)) : row);
          steps.push(shared.steps[i]);
        });
      }
      this.lives += 1;
      const key = `live${this.lives}`;
      const checks = window.kvvizPlayer.checks;
      if (checks && data.facts) checks.live(this.name, key, data.facts);
      rec.branches[key] = before.concat(rows);
      rec.steps[key] = steps.concat(data.steps);
      rec.links[key] = data.link;
      const old = `live${this.lives - KEEP_LIVE}`;
      if (rec.branches[old] && this.branch !== old) {
        delete rec.branches[old];
        delete rec.steps[old];
        delete rec.links[old];
      }
      return key;
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
    // A shortcut key (kvviz/web/keyboard.py: KEYS) for the node in view, else the last touched;
    // a page of one node acts on it. The node's own buttons do the same.
    key(action, inView) {
      if (this.classroom && this.classroom.isPaused()) return; // (eyes on the teacher)
      const name = ORDER.length === 1 ? ORDER[0] : nodes[inView] ? inView : touched || ORDER[0];
      if (nodes[name]) nodes[name].act(action); // (an action the node lacks does nothing)
    },
    // The live lesson's link for every node's state now (Explain it back opens live with it).
    query() { return currentQuery(false).toString(); },
    // Every prediction resolved in this page, from the recorded outcomes.
    predictions() { return Object.values(nodes).flatMap((n) => n.predictions || []); },
    // Hand in (the box at the end of the page): the name typed beside `button`, the predictions
    // and the state's link, in one request; the server's sentence shows beside it.
    async handIn(button) {
      const box = button.closest(".kv-handin-played") || button.parentElement;
      const say = (text, ok) => {
        const status = box.querySelector(".kv-handin-status");
        status.textContent = text;
        status.className = `kv-handin-status ${ok ? "kv-ok" : "kv-error"}`;
      };
      if (!config.handin) { say("Handing in needs the live lesson's server.", false); return; }
      const id = this.studentId();
      const q = currentQuery(false).toString();
      const body = { student_id: id, name: box.querySelector(".kv-handin-name").value,
                     predictions: this.predictions(), query: q ? `?${q}` : "" };
      if (this.checks) Object.assign(body, { checks: this.checks.handed(), answer: this.checks.answer() });
      button.disabled = true;
      try {
        const r = await fetch(config.handin, { method: "POST", headers: { "Content-Type": "application/json" },
                                               body: JSON.stringify(body), cache: "no-store" });
        const answer = await r.json();
        say(answer.message, answer.ok);
      } catch (e) {
        say("The server could not be reached: nothing was handed in. Try again in a moment.", false);
      } finally {
        button.disabled = false;
      }
    },
    // The browser's student id (the live lesson's boxes use the same: kvviz/handin/view.py), made once.
    studentId() {
      const KEY = "kvviz-student-id";
      let id = null;
      try { id = window.localStorage.getItem(KEY); } catch (e) { /* storage blocked: this page only */ }
      if (!/^[0-9a-f]{32}$/.test(id || "")) {
        id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
        try { window.localStorage.setItem(KEY, id); } catch (e) { /* (as above) */ }
      }
      return id;
    },
    nodes,
    config,
    decode,
  };
})();

// A link to a node of the whole lesson's page (`#explain`, as `/?node=explain` opens it): shown
// once its section is drawn; sections above it settle as they draw, so it is shown again a few
// times unless the student scrolls meanwhile.
(() => {
  const key = /^#([a-z]{1,20})$/.exec(location.hash);
  if (!key) return;
  const find = (root, depth) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.classList.contains(`kv-node-${key[1]}`)) return el;
      if (el.shadowRoot && depth < 6) {
        const hit = find(el.shadowRoot, depth + 1);
        if (hit) return hit;
      }
    }
    return null;
  };
  let stop = false;
  for (const type of ["wheel", "touchstart", "keydown"]) window.addEventListener(type, () => { stop = true; }, { once: true, passive: true });
  for (const ms of [400, 1000, 2000, 3500, 5000]) {
    setTimeout(() => {
      const el = stop ? null : find(document, 0);
      if (el && Math.abs(el.getBoundingClientRect().top) > 4) el.scrollIntoView({ block: "start" });
    }, ms);
  }
})();
