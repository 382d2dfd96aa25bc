// The player's (player.js) predictions: predict, then run, resolved in the page from the
// recorded outcome (kvviz/state/predict.py's rules, in the live page's words): a choice or a
// number locked in, the choice shown pressed, the verdict when a new branch shows its outcome
// (with the hand-in box under it on a served page), a pending one dropped when the question
// changed. Added to player.js's `Node`, in the order kvviz/export/player.py joins the player's
// files.
(function () {
  "use strict";
  const { Node, config, setVisible, escapeHtml } = window.kvvizPlayer._internal;

  // The roster's dots (kvviz/export/classroom.js): a prediction locked in or resolved.
  function madePrediction() {
    const c = window.kvvizPlayer && window.kvvizPlayer.classroom;
    if (c) c.changed();
  }

  Object.assign(Node.prototype, {
    // The panel's line (and `below` it: HTML of the page's own, the hand-in box under a verdict).
    status(text, cls, below) {
      const model = this.ids.status ? this.doc.get_model_by_id(this.ids.status) : null;
      if (!model) return;
      const html = text ? `<div class="kv-predict-note ${cls || ""}" role="status" data-node="${escapeHtml(this.name)}">`
        + `${escapeHtml(text)}</div>${below || ""}` : '<div class="kv-predict-note kv-empty"></div>';
      model.text = escapeHtml(html);
      const panel = this.ids.panel ? this.doc.get_model_by_id(this.ids.panel) : null;
      if (panel && text) setVisible(panel, true);
    },

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
    },

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
    },

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
    },
  });
})();
