// The player's (player.js) answers from the server: a link, a typed prompt or an action that no
// recording holds is sent to the server (`/lesson-live`, kvviz/serve/live.py), whose engine runs
// it and answers with one more branch, recorded the same way: the page plays it like the others,
// and says it was computed live. A "slow down" (429) is shown in the server's words, what was
// typed stays in its box, and nothing is sent again until the answer's Retry-After has passed.
// Added to player.js's `Node`, in the order kvviz/export/player.py joins the player's files.
(function () {
  "use strict";
  const { Node, config, decode, escapeHtml } = window.kvvizPlayer._internal;
  const KEEP_LIVE = 4; // branches computed live kept per node (Step back and Play replay them)
  // After the server says "slow down" (429: this address asked faster than it answers), nothing is
  // sent until its Retry-After has passed: the page says the server's sentence again instead (one
  // limit per address, so one for the whole page). Nothing is ever retried by itself.
  const slowDown = { until: 0, said: "" };

  Object.assign(Node.prototype, {
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
    },

    // A control that needs the engine (Release oldest, Fill the pool, a select): the server does it.
    doLive(what) {
      if (!what || typeof what.id !== "string") return;
      if (what.value !== undefined && this.isShown(what.model, "value", what.value)) return; // (an echo of show())
      if (this.commitsDraft(what.id)) return;
      this.live({ act: what.id, value: what.value, after: what.value === undefined });
    },

    // Whether the state shown holds `value` for this model's property (a select that BokehJS
    // sets again when its options change is not the student choosing).
    isShown(id, attr, value) {
      if (!this.shown || !id) return false;
      const i = this.rec.props.findIndex(([pid, a]) => pid === id && a === attr);
      return i >= 0 && i < this.shown.length && decode(this.rec.values[this.shown[i]]) === value;
    },

    // The button that commits the node's box (meta.typed.button: an action or a control's id), pressed
    // while the box holds text the student typed (not yet sent, not a text the page set): that
    // text is run, as Enter would. Returns whether it was.
    commitsDraft(actionOrLabel) {
      const t = this.meta.typed;
      const draft = typeof this.draft === "string" ? this.draft.trim() : "";
      if (!t || !t.button || actionOrLabel !== t.button || !draft || this.echoes.has(this.draft)) return false;
      this.typed(this.draft);
      return true;
    },

    // The properties this page holds beyond the recorded ones (from earlier live branches): the
    // server reads them too, so its branch says their value in every state.
    extras() {
      if (this.recorded === undefined) return []; // (none yet)
      const places = new Map((this.meta.models || []).map((id, i) => [id, i]));
      return this.rec.props.slice(this.recorded).map(([id, attr]) => `${places.get(id)}.${attr}`)
        .filter((x) => !x.startsWith("undefined"));
    },

    // What no recording holds, run by the server's engine from this node's link (`base`, default:
    // the state shown; less `drop`, plus `extra`, then the action `act` with `value`): its answer
    // is one more branch, shown at its end (`play`: from the first step after `to`, then played).
    // `after`: the action comes after the end of the branch
    // shown, whose states before it the new branch shares (the server records only the rest).
    // Says why when it can't; the recording keeps playing.
    async live(what) {
      this.busy = (this.busy || 0) + 1; // (a request in flight: tests and benchmarks wait on it)
      try { await this.ask(what || {}); } finally { this.busy -= 1; }
    },

    async ask({ base, extra, drop, act, value, at, after, to, typed, play }) {
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
      const key = this.addBranch(data, shared);
      if (play) { // (a request added mid-run: shown from its first step on, and played, as live)
        const first = this.rec.steps[key].findIndex((s) => s > to);
        at = first < 0 ? undefined : first;
      }
      this.go(key, at);
      if (play) this.play(true);
      const notices = Array.isArray(data.notices) ? data.notices.filter((n) => typeof n === "string") : [];
      const about = notices.length ? `<div class="kv-url-notice" role="alert"><b>About this link:</b><ul>`
        + notices.slice(0, 8).map((n) => `<li>${escapeHtml(n)}</li>`).join("") + "</ul></div>" : "";
      say(`${about}<p class="kv-live-note" role="status"><b>● Live:</b> computed just now by this server's engine, from
           the state you were at. Step back, Play and Rewind replay it here.</p>`);
    },

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
    },
  });
})();
