export function render({ model }) {
  const el = document.createElement("div");
  el.className = "kv-view-sensor";
  el.style.height = "1px";
  // "near": within a screen of the viewport, so a node is ready when it scrolls in;
  // "visible": any part of the section on screen (the sensor's parent, the slot).
  const report = (key, value) => { if (model[key] !== value) model[key] = value; };
  const near = new IntersectionObserver((es) => es.forEach((e) => report("near", e.isIntersecting)),
                                        { rootMargin: "100% 0px 100% 0px" });
  let visible = null;
  requestAnimationFrame(() => {
    near.observe(el);
    // This sensor renders in its own shadow root, whose host sits in the slot's shadow root:
    // two hosts up is the slot's element, which spans the whole section.
    const own = el.getRootNode().host;
    const slot = own && own.getRootNode().host;
    if (slot) {
      visible = new IntersectionObserver((es) => es.forEach((e) => report("in_view", e.isIntersecting)));
      visible.observe(slot);
    }
  });
  model.on("remove", () => { near.disconnect(); if (visible) visible.disconnect(); });
  return el;
}
