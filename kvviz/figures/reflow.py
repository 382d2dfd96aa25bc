"""Two layouts for one figure, chosen in the browser by its drawn width.

A figure of blocks keeps every position twice in its sources (`x`, `y`, … for a wide screen;
`x_n`, `y_n`, … for a narrow one, a phone). `reflow` installs a callback that runs in the
browser whenever the figure's drawn width changes: below `narrow_px` it points every glyph at
the narrow columns and sets the ranges and the height of that layout; above, back. Nothing is
sent to the server, and a layout is applied only when it changes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from bokeh.models import CustomJS

from kvviz.web.js_source import js_source

BIG_PX = 1500  # a figure this wide is on a projector (or a very large screen): larger text


@dataclass(frozen=True)
class Frame:
    """A layout's ranges (data units; y grows downwards, so y0 > y1) and height (px)."""

    x0: float
    x1: float
    y0: float
    y1: float
    height: int


REFLOW_JS = js_source(__file__, "reflow.js")


def reflow(fig, renderers: list[tuple[object, tuple[str, ...]]], narrow_px: int, wide: Frame | None,
           narrow: Frame | None, fonts: list[tuple[object, str, str, str]] = ()) -> None:
    """`renderers`: (glyph renderer, the properties whose column has a `_n` twin) pairs; a
    property is named as its column, or written 'property:column'. `fonts`: (model, font size
    property, normal size, size on a projector) for text that must read from the back of a room
    when the figure is BIG_PX wide or more. Frames None: the switch leaves the ranges and the
    height as they are (a figure that sets them itself)."""
    fig.js_on_change("inner_width", CustomJS(code=REFLOW_JS.replace("BIG_PX", str(BIG_PX)), args=dict(
        fig=fig, renderers=[r for r, _ in renderers], props=[list(p) for _, p in renderers],
        narrow_px=narrow_px, wide_frame=asdict(wide) if wide else None,
        narrow_frame=asdict(narrow) if narrow else None,
        fonts=[list(f) for f in fonts])))
