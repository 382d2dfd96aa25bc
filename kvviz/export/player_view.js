// The player's (player.js) node on screen: Play draws only while some of its node's section is on
// screen. Added to player.js's `Node`, in the order kvviz/export/player.py joins the player's files.
(function () {
  "use strict";
  const { Node } = window.kvvizPlayer._internal;

  Object.assign(Node.prototype, {
    // Whether any of the node's section (`sections`: kvviz/web/find_sections.js) is on screen (the
    // live lesson's sensor, kvviz/web/lazy.js, asks the same). Play keeps its time while the node is
    // scrolled away but draws none of its steps (`step`: 20-30 ms each of node 02's); the step it is
    // at is drawn once the node is back on screen, or when the run stops.
    watchView() {
      const found = sections(document, 0, []).find(([key]) => key === this.name);
      if (!found || !window.IntersectionObserver) return;
      this.section = found[1];
      new IntersectionObserver((entries) => {
        this.hidden = !entries[entries.length - 1].isIntersecting;
        if (!this.hidden && this.stale) this.show();
      }).observe(this.section);
    },
  });
})();
