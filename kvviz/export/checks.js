// Explain it back on the played page (kvviz/export/checks.py): each self-check's question for the
// run its node shows, the student's answer, then the engine's (recorded per run, or asked of the
// server in one request where the run is the student's own), and each node's facts with those an
// open check would give away withheld. Every sentence comes from the recording's data (the live
// lesson's own: kvviz/nodes/explain/state.py SAY). Loaded after the player's files
// (kvviz/export/player.py: PLAYER_FILES): player.js calls `refresh` whenever a node shows another
// run, player_live.js `live` with the facts of a branch the server answered.
(function () {
  "use strict";
  const P = window.kvvizPlayer;
  const esc = (t) => String(t).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  let data = null; // checks.py's meta
  let ids = {}; // part -> model id (kvviz/export/site.py)
  const responses = {}; // check key -> {node, question, predicted, outcome, right, why}
  const fromServer = {}; // node -> live branch -> {asked, facts}: what the server answered for it

  function model(id) {
    const doc = window.Bokeh && Bokeh.documents && Bokeh.documents[0];
    return doc && id ? doc.get_model_by_id(id) : null;
  }
  function setText(id, html) {
    const m = model(id);
    if (m && m.text !== esc(html)) m.text = esc(html); // (Panel's HTML panes hold their text escaped)
  }

  // What node `name` shows now: {asked, facts} of its run (null: not known here yet).
  // (a node not on this page, or not shown yet: its default run)
  function now(name) {
    const n = P.nodes[name];
    const branch = n && n.branch ? n.branch : data.defaults[name];
    if (branch && branch.startsWith("live")) {
      const got = (fromServer[name] || {})[branch] || {};
      return { asked: got.asked || {}, facts: got.facts || {} };
    }
    return { asked: ((data.asked[name] || {})[branch]) || {}, facts: ((data.facts[name] || {})[branch]) || {} };
  }

  function question(c) {
    const got = now(c.node);
    return got && got.asked[c.key] ? got.asked[c.key].question : null;
  }

  function isOpen(c) {
    const done = responses[c.key];
    return !done || done.question !== question(c);
  }

  function refresh() {
    if (!data) return;
    const hidden = new Set(data.checks.filter(isOpen).flatMap((c) => c.hides));
    for (const c of data.checks) {
      const q = question(c);
      setText(ids[`question-${c.key}`], `<div class="kv-question" data-check="${esc(c.key)}">${esc(q === null
        ? data.say.live_node : q)}</div>`);
    }
    const items = [];
    for (const key of data.order) {
      const got = now(data.fact_node[key]);
      const fact = got && got.facts[key];
      if (fact) items.push(`<li>${esc(hidden.has(key) ? fact[1] : fact[0])}</li>`);
    }
    setText(ids.facts, `<div class="kv-facts"><div class="kv-facts-title">${esc(data.say.facts_title)}</div>`
      + `<ul>${items.join("")}</ul></div>`);
  }

  function say(c, text, right) {
    const cls = right === undefined ? "kv-feedback" : `kv-feedback ${right ? "kv-right" : "kv-wrong"}`;
    setText(ids[`feedback-${c.key}`], `<div class="${cls}" data-check="${esc(c.key)}" role="status">${esc(text)}</div>`);
  }

  function verdict(c, r) {
    return data.say.verdict.replace("{head}", r.right ? data.say.right : data.say.wrong)
      .replace("{predicted}", r.predicted).replace("{outcome}", r.outcome).replace("{why}", c.why);
  }

  // The engine's answer to check `c` for a run the student made live: one request to the server.
  async function askServer(c) {
    const n = P.nodes[c.node];
    const q = new URLSearchParams(n.link());
    q.set("node", c.node);
    q.set("check", c.key);
    const r = await fetch(`${P.config.frames}?${q}`, { cache: "no-store" });
    const answer = await r.json().catch(() => null);
    if (!r.ok || !answer || !answer.ok) throw new Error(answer && answer.message ? answer.message : `status ${r.status}`);
    remember(c.node, n.branch, { asked: answer.asked, facts: answer.facts });
  }

  function remember(name, branch, got) {
    const mine = (fromServer[name] = fromServer[name] || {});
    mine[branch] = { ...(mine[branch] || {}), ...got };
  }

  async function check(key, typed) {
    const c = data && data.checks.find((x) => x.key === key);
    if (!c) return;
    if (!isOpen(c)) { say(c, data.say.again + verdict(c, responses[key]), responses[key].right); return; }
    const text = String(typed || "").trim();
    if (!/^\d{1,6}$/.test(text)) { say(c, data.say.number, false); return; }
    if (question(c) === null) {
      if (!P.config.frames) { say(c, data.say.live_node, false); return; }
      try { await askServer(c); } catch (e) { say(c, `${data.say.unreachable} (${e.message})`, false); return; }
    }
    const asked = now(c.node).asked[key];
    if (asked.answer === null || asked.answer === undefined) { say(c, data.say.none, false); return; }
    const predicted = String(Number(text));
    const r = { node: c.node, question: asked.question, predicted, outcome: String(asked.answer),
                right: predicted === String(asked.answer), why: c.why };
    responses[key] = r;
    say(c, verdict(c, r), r.right);
    refresh();
  }

  P.checks = {
    setup(meta, parts) {
      data = meta;
      ids = parts;
      const start = () => {
        const doc = window.Bokeh && Bokeh.documents && Bokeh.documents[0];
        if (!doc || doc.is_idle === false) return setTimeout(start, 50); // (its views drawn first)
        refresh();
        document.documentElement.dataset.kvReadyExplain = "1";
      };
      start();
    },
    refresh,
    check,
    // A run the server computed (kvviz/serve/live.py): its facts came with it.
    live(name, branch, facts) { remember(name, branch, { facts: facts || {} }); },
    // The self-checks answered, as a hand-in holds them (kvviz/handin/model.py: HandInCheck).
    handed() {
      return Object.entries(responses).map(([key, r]) => ({ key, question: r.question, typed: r.predicted,
        outcome: r.outcome, feedback: verdict(data.checks.find((c) => c.key === key), r), right: r.right }));
    },
    answer() { const m = model(ids.answer); return m ? String(m.value_input || m.value || "") : ""; },
    responses,
  };
})();
