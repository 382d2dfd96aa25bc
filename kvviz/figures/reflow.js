const big = fig.inner_width >= BIG_PX;
if (fig.__kv_big !== big && (fig.__kv_big !== undefined || big)) {
  for (const [model, prop, normal, large] of fonts) model[prop] = big ? large : normal;
}
fig.__kv_big = big;
const narrow = fig.inner_width > 0 && fig.inner_width < narrow_px;
if (fig.__kv_narrow === narrow || (fig.__kv_narrow === undefined && !narrow)) { fig.__kv_narrow = narrow; return; }
fig.__kv_narrow = narrow;
const sfx = narrow ? "_n" : "";
renderers.forEach((r, i) => {
  for (const k of props[i]) { const [prop, field] = k.split(":"); r.glyph[prop] = {field: (field ?? prop) + sfx}; }
});
const f = narrow ? narrow_frame : wide_frame;
if (f) {
  fig.x_range.start = f.x0; fig.x_range.end = f.x1;
  fig.y_range.start = f.y0; fig.y_range.end = f.y1;
  fig.height = f.height;
}
