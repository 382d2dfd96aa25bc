const KEY = "kvviz-student-id";
function newId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
export function render({ model }) {
  let id = null;
  try { id = window.localStorage.getItem(KEY); } catch (e) { /* storage blocked: this page only */ }
  if (!id || !/^[0-9a-f]{32}$/.test(id)) {
    id = newId();
    try { window.localStorage.setItem(KEY, id); } catch (e) { /* (as above) */ }
  }
  model.student_id = id;
  const el = document.createElement("span");
  el.className = "kv-student-id";
  return el;
}
