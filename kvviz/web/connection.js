const PROBE_MS = 3000, GIVE_UP_MS = 8000;  // probe the server; after this long away, reload when it answers

export function render({ model }) {
  const bar = document.createElement("div");
  bar.className = "kv-connection";
  bar.setAttribute("role", "status");
  bar.style.cssText = "position:fixed;top:0;left:0;right:0;z-index:10000;display:none;padding:.6rem 1rem;" +
    "background:#fff3cd;color:#16202a;border-bottom:2px solid #E69F00;font:1rem/1.4 system-ui,sans-serif;";
  const text = document.createElement("span");
  const reload = document.createElement("button");
  reload.textContent = "Reload";
  reload.style.cssText = "margin-left:1rem;font:inherit;padding:.1rem .8rem;";
  reload.addEventListener("click", () => location.reload());
  bar.append(text, reload);
  document.body.appendChild(bar);
  let lostAt = null, probe = null;
  const show = (message) => { text.textContent = message; bar.style.display = "block"; };
  const stop = () => { if (probe) clearInterval(probe); probe = null; };
  const tryServer = async () => {
    try {
      // (a small static file: asking for the page itself would build a whole session)
      const r = await fetch(new URL("assets/kvviz.css", location.href), { cache: "no-store" });
      if (r.ok && lostAt !== null && Date.now() - lostAt > GIVE_UP_MS) location.reload();
    } catch (_e) { /* still away */ }
  };
  const attach = () => {
    const doc = window.Bokeh && Bokeh.documents && Bokeh.documents[0];
    if (!doc) return setTimeout(attach, 200);
    doc.on_event("connection_lost", () => {
      if (lostAt === null) lostAt = Date.now();
      show("The connection to the class server was lost. Reconnecting… (your place is kept in the " +
           "address bar: the page reloads it when the server answers)");
      if (!probe) probe = setInterval(tryServer, PROBE_MS);
    });
    doc.on_event("client_reconnected", () => {
      lostAt = null; stop();
      show("Reconnected.");
      setTimeout(() => { if (lostAt === null) bar.style.display = "none"; }, 2500);
    });
  };
  attach();
  model.on("remove", () => { stop(); bar.remove(); });
  const el = document.createElement("span");
  el.className = "kv-connection-watch";
  return el;
}
