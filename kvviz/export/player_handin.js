// The player's (player.js) hand-in: the box at the end of the page (and under an answered
// prediction on a served page: kvviz/export/site.py HANDIN_BOX) sends the student's name, the
// predictions resolved on the page and the state's link, in one request, under the browser's
// student id. Added to `window.kvvizPlayer`, in the order kvviz/export/player.py joins the
// player's files.
(function () {
  "use strict";
  const { config, currentQuery } = window.kvvizPlayer._internal;

  Object.assign(window.kvvizPlayer, {
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
  });
})();
