// The player's (player.js) last file, joined after the others (kvviz/export/player.py): a link to
// a node of the whole lesson's page (`#explain`, as `/?node=explain` opens it) shows that node
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
