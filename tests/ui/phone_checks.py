"""What the phone tests share: a phone's browser context, and what a figure draws past its room."""

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
         "device_scale_factor": 2}

# What a figure draws past its room: a canvas title wider than its figure ("clipped"), a tree's
# label wider than its box (node 03's radix tree, node 04's block trees), or two label lines
# taller than it ("spills"); measured with the glyphs' own fonts.
FIT_JS = """() => {
  const TREES = ["kv-tree", "kv-vllm-tree", "kv-our-tree"];
  const ctx = document.createElement("canvas").getContext("2d");
  const val = (v) => (v !== null && typeof v === "object" && "value" in v) ? v.value : v;
  const width = (text, font) => { ctx.font = font; return ctx.measureText(text).width; };
  const out = {spills: [], clipped: [], checked: 0};
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    if (m.type !== "Figure" || !(m.inner_width > 0)) continue;
    if (m.title && m.title.text) {
      const t = m.title, w = width(t.text, `${val(t.text_font_style)} ${val(t.text_font_size)} ${val(t.text_font)}`);
      out.checked++;
      if (w > m.inner_width) out.clipped.push(`${t.text} ${Math.round(w)} > ${m.inner_width}`);
    }
    if (!(m.css_classes || []).some((c) => TREES.includes(c))) continue;
    const rect = m.renderers.find((r) => r.glyph.type === "Rect");
    const boxPx = val(rect.glyph.width) * m.inner_width / Math.abs(m.x_range.end - m.x_range.start);
    const boxHeightPx = val(rect.glyph.height) * m.inner_height / Math.abs(m.y_range.end - m.y_range.start);
    const data = rect.data_source.data;
    let lines = 0;
    for (const r of m.renderers.filter((r) => r.glyph.type === "Text")) {
      const g = r.glyph, field = g.text.field, size = val(g.text_font_size);
      lines += parseFloat(size);
      const font = `${val(g.text_font_style) || "normal"} ${size} ${val(g.text_font) || "helvetica"}`;
      for (let i = 0; i < data.x.length; i++) {
        if (Number.isNaN(data.x[i]) || !data[field][i]) continue;
        out.checked++;
        const w = width(data[field][i], font);
        if (w > boxPx - 4) out.spills.push(`${data[field][i]} ${Math.round(w)} > ${Math.round(boxPx)}`);
      }
    }
    if (lines * 1.15 > boxHeightPx) out.spills.push(`two lines of ${lines}px in a ${Math.round(boxHeightPx)} px box`);
  }
  return out;
}"""  # noqa: E501 (data: a string kept as written)
