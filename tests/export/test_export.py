"""The static export (kvviz/export): its recordings hold exactly what the live engine shows."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvviz.export.recipes import recipes
from kvviz.export.record import encode, initial_values
from kvviz.nodes import BY_KEY, LIVE

pytestmark = pytest.mark.slow
REGISTER = re.compile(r'window\.kvvizPlayer\.register\("(\w+)", "([A-Za-z0-9+/=]+)"')
CARD = re.compile(r'data-label="([^"]+)"[^>]*>.*?class="kv-value">([^<]*)<', re.S)


def test_values_are_encoded_for_the_player():
    assert encode(np.array([1.0, np.nan])) == {"nd": "f", "v": [1.0, None]}
    assert encode(np.array([1, 2], dtype=np.int32)) == {"nd": "i", "v": [1, 2]}
    assert encode({"a": [float("inf")]}) == {"map": {"a": [{"f": "inf"}]}}
    with pytest.raises(TypeError):
        encode(object())


@pytest.fixture(scope="module")
def recordings(static_site) -> dict[str, dict]:
    """node -> its recording, read back out of its exported page."""
    out = {}
    for node in [n for n in LIVE if n.key in recipes()]:
        text = (static_site / f"{node.key}.html").read_text(encoding="utf-8")
        ((key, packed),) = REGISTER.findall(text)
        out[key] = json.loads(gzip.decompress(base64.b64decode(packed)))
    return out


def test_reading_a_views_properties_skips_deprecated_aliases():
    """A hover tool's `toggleable` is another name for `visible` (deprecated in Bokeh 3.4): the
    recording reads every property once, under its own name, with no deprecation warning."""
    from bokeh.models import HoverTool
    from bokeh.plotting import figure
    from bokeh.util.warnings import BokehDeprecationWarning

    fig = figure(tools=[HoverTool()])
    with warnings.catch_warnings():
        warnings.simplefilter("error", BokehDeprecationWarning)
        values = initial_values(fig.references())
    hover = next(m for m in fig.references() if isinstance(m, HoverTool))
    assert (hover.id, "visible") in values and (hover.id, "toggleable") not in values


def test_every_page_is_written_small_enough_and_says_it_is_a_recording(static_site):
    for name in ("index.html", "fragmentation.html", "paging.html", "radix.html", "explain.html"):
        page = static_site / name
        assert page.stat().st_size <= 1_500_000, name  # (the libraries are not in it)
        assert "A recording of the live lesson" in page.read_text(encoding="utf-8")
    # BokehJS and Panel's bundle once, beside the pages; the whole site within 6 MB
    assert len(list(static_site.rglob("bokeh.min.js"))) == 1
    assert len(list(static_site.rglob("panel.min.js"))) == 1
    assert sum(f.stat().st_size for f in static_site.rglob("*") if f.is_file()) <= 6_000_000
    assert "cdn.holoviz.org" not in (static_site / "index.html").read_text(encoding="utf-8").split("<script",
                                                                                                   1)[0]


def cards_shown(rec: dict, branch: str, index: int) -> dict[str, str]:
    """The card texts a recorded state puts on the page (cards that never change are absent)."""
    row = rec["branches"][branch][index]
    shown = {}
    for (_, attr), vi in zip(rec["props"], row, strict=True):
        value = rec["values"][vi]
        if attr == "text" and isinstance(value, str) and "kv-metric" in html.unescape(value):
            shown.update(CARD.findall(html.unescape(value)))
    return shown


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_recorded_state_shows_the_cards_the_live_engine_shows_for_it(recordings, data):
    node = data.draw(st.sampled_from(sorted(recordings)))
    recipe, rec = recipes()[node], recordings[node]
    branch = data.draw(st.sampled_from(sorted(rec["branches"])))
    index = data.draw(st.integers(0, len(rec["branches"][branch]) - 1))
    state = BY_KEY[node].state()
    recipe.branches[branch](state)
    for _ in range(len(rec["branches"][branch]) - 1 - index):
        assert state.step_back()
    assert state.step_count == rec["steps"][branch][index]
    live = {c.label: c.value(getattr(state, c.of).metrics) for c in BY_KEY[node].cards}
    shown = cards_shown(rec, branch, index)
    assert shown, "no card changes in this recording"
    assert {label: live[label] for label in shown if label in live} == {
        label: text for label, text in shown.items() if label in live}


def test_the_sites_self_checks_are_the_served_recordings_and_answer_every_recorded_branch(static_site):
    """Explain it back's self-checks are made once per code, by the served recording, and read back
    (`recorded_checks`) for the static site: its pages hold exactly those, with a question and an
    answer for every check at every branch of its node's recipe."""
    from kvviz.export import cache
    from kvviz.export.reuse import recorded_checks
    from kvviz.nodes.explain.checks import CHECKS

    served = recorded_checks(cache.make())
    assert recorded_checks(static_site) == served
    for page in ("index.html", "explain.html"):
        text = (static_site / page).read_text(encoding="utf-8")
        assert text.count("window.kvvizPlayer.checks.setup(" + json.dumps(served) + ", ") == 1, page
    plan = recipes()
    for check in CHECKS:
        if check.node in plan:
            asked = served["asked"][check.node]
            assert set(asked) == set(plan[check.node].branches), check.node
            assert all(check.key in by_branch for by_branch in asked.values()), check.key
