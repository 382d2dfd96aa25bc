// The class the teacher runs, on the played page (kvviz/handin/classroom.py declares it; its
// `browser_config` is what `setup` is handed). The page reports where it is (the node in view,
// and on which nodes a prediction is made: never what was predicted) when that changes and every
// `heartbeat_s`, carrying the state it shows (the teacher's "Show"); while it is visible it asks
// for the class state, which the server holds until it changes (kvviz/handin/class_endpoint.py),
// and follows it: "Eyes on the teacher" over the whole page while paused, the
// nodes past the teacher's pace held, and a "follow me" brought here once. A scripted action sends
// nothing: a report goes only when where the page is changes, at most one a `gap_ms`.
// `sections(root, depth, found)` (kvviz/web/find_sections.js) is joined before it, with the player.
(function () {
  "use strict";
  const TOKEN_KEY = "kvviz-roster-token";
  const NAME_KEY = "kvviz-student-name";
  const SEEN_KEY = "kvviz-follow-seen";
  let config = null;
  let sent = null; // what the last report said
  let lastSent = 0;
  let timer = null;
  let asking = false; // (a poll in flight)
  let paused = false;
  let stopped = false; // (the server refused this page's reports for good)
  let pace = "";

  function store(key, value) {
    try {
      if (value === undefined) return window.localStorage.getItem(key);
      window.localStorage.setItem(key, value);
    } catch (e) { /* storage blocked: this page only */ }
    return value === undefined ? null : value;
  }

  function sectionsByNode() {
    const found = new Map();
    for (const [key, el] of sections(document, 0, [])) if (!found.has(key)) found.set(key, el);
    return found;
  }

  function nodeInView() {
    let best = "", area = 0;
    for (const [key, el] of sectionsByNode()) {
      if (!(key in config.numbers)) continue;
      const r = el.getBoundingClientRect();
      const h = Math.min(r.bottom, window.innerHeight) - Math.max(r.top, 0);
      if (h > area) { best = key; area = h; }
    }
    return best;
  }

  function predicted() {
    const nodes = window.kvvizPlayer.nodes;
    return Object.keys(config.numbers).filter((k) => nodes[k] && (nodes[k].pending || (nodes[k].predictions || []).length));
  }

  function what() {
    const name = (store(NAME_KEY) || "").slice(0, config.max_name);
    return { node: nodeInView(), predicted: predicted(), name };
  }

  // A report when what the page says changed (or `beat`: the heartbeat), at most one a `gap_ms`,
  // and none while one is on its way: its answer may bring the page's token, without which the next
  // would be refused as another page's id (a busy server answering slower than `gap_ms`).
  let later = null;
  let inflight = false;
  async function report(beat) {
    if (stopped || !config) return;
    const now = what();
    const same = sent && JSON.stringify(now) === JSON.stringify(sent);
    if (same && !beat) return;
    const wait = inflight ? config.gap_ms : lastSent + config.gap_ms - Date.now();
    if (wait > 0) {
      if (later === null) later = setTimeout(() => { later = null; report(beat); }, wait);
      return;
    }
    const id = window.kvvizPlayer.studentId(); // (the hand-in's: one student on both)
    let saved = null;
    try { saved = JSON.parse(store(TOKEN_KEY) || "null"); } catch (e) { saved = null; }
    const q = window.kvvizPlayer.query(); // (the state shown: carried along, never a reason to report)
    const body = { student_id: id, ...now, query: q ? `?${q}`.slice(0, config.max_query) : "" };
    if (saved && saved.id === id) body.token = saved.token;
    lastSent = Date.now();
    sent = now;
    inflight = true;
    try {
      const r = await fetch(config.report, { method: "POST", headers: { "Content-Type": "application/json" },
                                             body: JSON.stringify(body), cache: "no-store" });
      const answer = await r.json().catch(() => ({}));
      if (answer.token) store(TOKEN_KEY, JSON.stringify({ id, token: answer.token }));
      if (r.status === 403 || r.status === 409 || r.status === 400) stopped = true;
      else if (!r.ok) sent = null; // (sent again with the next change or beat)
    } catch (e) {
      sent = null;
    } finally {
      inflight = false;
    }
  }

  function say(template, node) {
    return String(config.say[template] || "").replace("{node}", config.numbers[node] || node);
  }

  // -- pause: "Eyes on the teacher" over the whole page -------------------------------------------
  function showPause(on) {
    let cover = document.getElementById("kv-class-paused");
    if (on && !cover) {
      cover = document.createElement("div");
      cover.id = "kv-class-paused";
      cover.className = "kv-class-paused";
      cover.setAttribute("role", "alertdialog");
      cover.setAttribute("aria-modal", "true");
      cover.setAttribute("aria-labelledby", "kv-class-paused-title");
      const title = document.createElement("h2");
      title.id = "kv-class-paused-title";
      title.textContent = config.say.paused_title;
      const line = document.createElement("p");
      line.textContent = config.say.paused_line;
      cover.append(title, line);
      cover.tabIndex = -1;
      for (const el of document.body.children) el.inert = true;
      document.body.append(cover);
      for (const n of Object.values(window.kvvizPlayer.nodes)) n.play(false);
      cover.focus();
    } else if (!on && cover) {
      cover.remove();
      for (const el of document.body.children) el.inert = false;
    }
    paused = on;
  }

  // -- pace: the nodes past the teacher's held ----------------------------------------------------
  function showPace(upTo) {
    const order = Object.keys(config.numbers);
    const limit = upTo ? order.indexOf(upTo) : order.length;
    let held = null;
    for (const [key, el] of sectionsByNode()) {
      const i = order.indexOf(key);
      const hold = i > limit && limit >= 0;
      el.inert = hold;
      el.style.opacity = hold ? "0.25" : "";
      el.style.filter = hold ? "blur(3px) grayscale(1)" : "";
      el.dataset.kvHeld = hold ? "1" : "";
      if (hold && held === null) held = key;
    }
    let note = document.getElementById("kv-class-pace");
    if (held === null) { if (note) note.remove(); }
    else {
      if (!note) {
        note = document.createElement("p");
        note.id = "kv-class-pace";
        note.className = "kv-class-note kv-class-pace";
        note.setAttribute("role", "status");
        document.body.append(note);
      }
      note.textContent = say("paced", held);
    }
    pace = upTo;
  }

  // -- follow me: brought to the teacher's node (and state), once per command ---------------------
  function follow(f) {
    if (!f || !f.seq || String(f.seq) === sessionStorage.getItem(SEEN_KEY)) return;
    try { sessionStorage.setItem(SEEN_KEY, String(f.seq)); } catch (e) { /* (applied again after a reload) */ }
    const node = window.kvvizPlayer.nodes[f.node];
    let moved = false;
    if (node && f.query) {
      const wanted = node.fromLink(f.query);
      if (wanted) {
        node.play(false);
        node.go(wanted.branch, wanted.index);
        node.restoreVars(wanted.branch);
        moved = true;
      }
    }
    const el = sectionsByNode().get(f.node);
    if (el) el.scrollIntoView({ block: "start" });
    toast(say(moved ? "followed_state" : "followed", f.node));
    setTimeout(() => report(false), 0);
  }

  function toast(text) {
    let note = document.getElementById("kv-class-followed");
    if (!note) {
      note = document.createElement("p");
      note.id = "kv-class-followed";
      note.className = "kv-class-note kv-class-followed";
      note.setAttribute("role", "status");
      document.body.append(note);
    }
    note.textContent = text;
    clearTimeout(note.kvTimer);
    note.kvTimer = setTimeout(() => note.remove(), 8000);
  }

  function apply(state) {
    if (!state || typeof state !== "object") return;
    if (Boolean(state.paused) !== paused) showPause(Boolean(state.paused));
    if ((state.pace || "") !== pace) showPace(state.pace || "");
    follow(state.follow);
  }

  // The class state, held by the server until it differs from the one shown (`since`: its tag),
  // then asked for again at once; an answer that came back unchanged at once (no server holding
  // it), or none, is asked for again after `poll_ms`.
  let shownTag = "";
  async function poll() {
    timer = null;
    if (asking || document.visibilityState !== "visible") return; // (asked again when it is)
    asking = true;
    let again = config.poll_ms;
    const t0 = Date.now();
    try {
      const since = shownTag ? `${config.status.includes("?") ? "&" : "?"}since=${encodeURIComponent(shownTag)}` : "";
      const r = await fetch(config.status + since, { cache: "no-cache" }); // (revalidated: a 304 when unchanged)
      if (r.ok) {
        const state = await r.json();
        apply(state);
        const tag = typeof state.tag === "string" ? state.tag.slice(0, 64) : "";
        if (tag && (tag !== shownTag || Date.now() - t0 > config.poll_ms)) again = 0;
        shownTag = tag;
      }
    } catch (e) { /* the server is away: the lesson plays on; asked again */ }
    asking = false;
    if (timer === null) timer = setTimeout(poll, again);
  }

  window.kvvizPlayer.classroom = {
    setup(options) {
      config = options;
      document.addEventListener("input", (event) => {
        const box = event.composedPath()[0];
        if (box && box.classList && box.classList.contains("kv-handin-name")) {
          store(NAME_KEY, String(box.value).slice(0, config.max_name));
          report(false);
        }
      });
      let scrolled = null;
      window.addEventListener("scroll", () => {
        if (scrolled === null) scrolled = setTimeout(() => { scrolled = null; report(false); }, 500);
      }, { passive: true });
      document.addEventListener("visibilitychange", () => {
        if (document.visibilityState === "visible" && timer === null) poll();
      });
      setInterval(() => report(true), config.heartbeat_s * 1000);
      const start = () => {
        if (Object.keys(window.kvvizPlayer.nodes).length === 0) { setTimeout(start, 200); return; }
        report(true);
        poll();
      };
      start();
    },
    // (the player says a prediction was locked in or resolved: the roster's dots)
    changed() { if (config) report(false); },
    isPaused() { return paused; },
  };
})();
