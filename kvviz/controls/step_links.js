export function render({ model }) {
  const nav = document.createElement("nav");
  nav.className = "kv-steps";
  nav.setAttribute("aria-label", model.label);
  nav.innerHTML = model.items_html;
  // (a notebook's frame, about:srcdoc, holds one node: the other nodes' pages are not there)
  if (location.protocol === "about:") nav.style.display = "none";
  nav.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-node]");
    if (!link) return;
    const hit = sections(document, 0, []).find(([key]) => key === link.dataset.node);
    if (!hit) return;  // a node alone: follow the link to the other node's page
    event.preventDefault();
    hit[1].scrollIntoView({ behavior: "smooth", block: "start" });
    // (nodes passed on the way are built as they come near and grow: settle on the target)
    for (const ms of [700, 1400, 2200]) {
      setTimeout(() => { if (Math.abs(hit[1].getBoundingClientRect().top) > 4) hit[1].scrollIntoView({ block: "start" }); }, ms);
    }
  });
  return nav;
}
