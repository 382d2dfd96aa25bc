// The player's (player.js) recipes: a node's own actions, as its recipe declares them
// (kvviz/nodes/recipe.py: Effect; each `vars` variable set, counted or reset, and the branch
// their values name shown), and the state a link names (its recorded branch, and the variables
// that branch's name holds). Added to player.js's `Node`, in the order kvviz/export/player.py
// joins the player's files.
(function () {
  "use strict";
  const { Node, canonical } = window.kvvizPlayer._internal;

  Object.assign(Node.prototype, {
    branchOf(vars) {
      return (this.meta.branch || "").replace(/\{(\w+)\}/g, (_m, k) => String(vars[k]));
    },

    run(effect, value) {
      this.unheld();
      const v = this.vars;
      const was = this.branchOf(v);
      if (effect.reset) {
        Object.assign(v, this.meta.vars || {});
        if (this.draft) { this.draft = ""; this.shown = null; } // (Reset refills the box, as live: all set again)
      }
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
    },

    // Whether the action `effect` sets was taken already in the state shown: at or after the step it
    // was taken at in this branch, the end of the branch it was taken from (its variables at their
    // defaults). Before that step the live lesson runs the node to its end and takes it there.
    taken(effect) {
      const before = { ...this.vars };
      for (const k of Object.keys(effect.set || {})) before[k] = (this.meta.vars || {})[k];
      const from = (this.rec.steps[this.branchOf(before)] || []).at(-1);
      return from !== undefined && this.rec.steps[this.branch][this.index] >= from;
    },

    // A variable an action set to a constant (Free R2: freed 1), shown at a step before that action
    // was taken (a Step back or Rewind past it): the live state there no longer holds it (the
    // engine's timeline undid it), so the variables do not either.
    unheld() {
      const defaults = this.meta.vars || {};
      if (!(this.rec.steps || {})[this.branch]) return;
      for (const e of Object.values(this.meta.actions || {})) {
        const set = Object.entries(e.set || {});
        if (!set.length || e.count || e.reset || e.replay) continue;
        const holds = set.every(([k, x]) => x !== "$value" && this.vars[k] !== defaults[k]
          && this.vars[k] === (typeof x === "boolean" ? Number(x) : x));
        if (holds && !this.taken(e)) for (const [k] of set) this.vars[k] = defaults[k];
      }
    },

    // A request a count action added (Add request) after the step shown: the live state there no
    // longer holds it (a step back past an add undoes it), so from here the branch with one fewer
    // is shown, at the same step (up to there it reads the same: the recording copied those states).
    untaken() {
      const defaults = this.meta.vars || {};
      for (const e of Object.values(this.meta.actions || {})) {
        if (!e.count || !(this.rec.steps || {})[this.branch]) continue;
        const step = this.rec.steps[this.branch][this.index];
        while (this.vars[e.count] > (defaults[e.count] || 0) && this.branch === this.branchOf(this.vars)) {
          const fewer = this.branchOf({ ...this.vars, [e.count]: this.vars[e.count] - 1 });
          const at = (this.rec.steps[fewer] || []).indexOf(step);
          if (at < 0) break;
          this.vars[e.count] -= 1;
          this.branch = fewer;
          this.index = at;
        }
      }
    },

    // The variables a recorded branch's name holds (a link opened on it): read by its template.
    restoreVars(branch) {
      const names = [];
      const pattern = (this.meta.branch || "").replace(/[.*+?^$()|[\]\\]/g, "\\$&")
        .replace(/\{(\w+)\}/g, (_m, k) => { names.push(k); return "(.+?)"; });
      const m = new RegExp(`^${pattern}$`).exec(branch);
      if (!m) return;
      names.forEach((k, i) => { this.vars[k] = /^\d+$/.test(m[i + 1]) ? Number(m[i + 1]) : m[i + 1]; });
    },

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
    },
  });
})();
