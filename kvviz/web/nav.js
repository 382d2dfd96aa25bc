export function render({ model }) {
  if (model.vertical) {
    // The template lists its sidebar's parts in a <ul> of <div>s: not a list to assistive
    // technology (axe-core's "list" rule); this <nav> says what it is.
    for (const ul of document.querySelectorAll("#sidebar ul.flex-column")) ul.setAttribute("role", "none");
    // The template's main area and its title are plain elements: say what they are (axe-core's
    // "landmark-one-main", "region" and "page-has-heading-one").
    const main = document.getElementById("main");
    if (main && !main.getAttribute("role")) main.setAttribute("role", "main");
    const title = document.querySelector("#header .title");
    if (title && !title.querySelector("h1")) {
      const h1 = document.createElement("h1");
      h1.style.cssText = "font: inherit; margin: 0; display: inline;";
      h1.textContent = title.textContent.trim();
      title.textContent = "";
      title.appendChild(h1);
    }
  }
  const nav = document.createElement("nav");
  nav.className = "kv-nav " + (model.vertical ? "kv-nav-vertical" : "kv-nav-row");
  nav.setAttribute("aria-label", "The ideas of this lesson");
  nav.innerHTML = model.items_html;
  nav.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-node]");
    if (!link) return;
    event.preventDefault();
    const hit = sections(document, 0, []).find(([key]) => key === link.dataset.node);
    if (!hit) return;
    hit[1].scrollIntoView({ behavior: "smooth", block: "start" });
    // Sections passed on the way are built as they come near (kvviz/web/lazy.py) and grow,
    // moving the target down: settle on it again until it stays put, unless the student
    // scrolls meanwhile.
    let stop = false;
    const cancel = () => { stop = true; };
    for (const type of ["wheel", "touchstart", "keydown"]) window.addEventListener(type, cancel, { once: true, passive: true });
    for (const ms of [700, 1400, 2200, 3200]) {
      setTimeout(() => {
        if (!stop && Math.abs(hit[1].getBoundingClientRect().top) > 4) hit[1].scrollIntoView({ block: "start" });
      }, ms);
    }
  });
  return nav;
}
