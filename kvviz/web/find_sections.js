function sections(root, depth, found) {
  for (const el of root.querySelectorAll("*")) {
    const key = [...el.classList].find((c) => c.startsWith("kv-node-"));
    if (key) { found.push([key.slice(8), el]); continue; }
    if (el.shadowRoot && depth < 6) sections(el.shadowRoot, depth + 1, found);
  }
  return found;
}
