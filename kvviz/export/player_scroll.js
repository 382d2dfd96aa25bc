// The player's (player.js) last file, joined after the others (kvviz/export/player.py): a link to
// a node of the whole lesson's page (`#explain`, as `/?node=explain` opens it) shows that node
// once its section is drawn; sections above it settle as they draw, so it is shown again a few
// times unless the student scrolls meanwhile.
(() => {
  const key = /^#([a-z]{1,20})$/.exec(location.hash);
  if (!key) return;
  let stop = false;
  for (const type of ["wheel", "touchstart", "keydown"]) window.addEventListener(type, () => { stop = true; }, { once: true, passive: true });
  for (const ms of [400, 1000, 2000, 3500, 5000]) {
    setTimeout(() => {
      const el = stop ? null : (sections(document, 0, []).find(([k]) => k === key[1]) || [])[1];
      if (el && Math.abs(el.getBoundingClientRect().top) > 4) el.scrollIntoView({ block: "start" });
    }, ms);
  }
})();
