"""Bokeh's and Panel's private API, used in one module (kvviz/process/private_api.py): each patch
applies on the tested minor versions, and refuses on any other (one RuntimeWarning saying what
is left to the library, nothing changed). Bokeh's cached defaults are checked against Bokeh's
own on a whole page in tests/lesson/test_bokeh_defaults.py."""

from __future__ import annotations

import warnings

import bokeh
import panel as pn
import pytest
from bokeh.core.property.descriptors import PropertyDescriptor
from panel.theme.fast import Fast

from kvviz.process import private_api


def test_the_installed_versions_are_the_tested_ones_and_have_every_private_name():
    """(requirements.txt pins them; an upgrade past the pins fails here first)"""
    assert bokeh.__version__.startswith(private_api.TESTED["bokeh"])
    assert pn.__version__.startswith(private_api.TESTED["panel"])
    for owner, name in [(PropertyDescriptor, "_get_default"), (PropertyDescriptor, "has_unstable_default"),
                        (pn.pane.HTML, "_update"), (pn.pane.HTML, "_process_param_change"),
                        (pn.widgets.Checkbox, "_debounce"), (pn.widgets.IntSlider, "_debounce"),
                        (Fast, "_resources")]:
        assert hasattr(owner, name), (owner, name)
    assert isinstance(Fast._resources, dict) and "font" in Fast._resources


def test_the_lessons_classes_are_patched_on_the_tested_panel():
    from kvviz.web.live_html import LiveHTML
    from kvviz.web.widgets import Checkbox, IntSlider

    assert LiveHTML._update is private_api._text_only_update
    assert Checkbox._debounce == 0 and IntSlider._debounce == 0
    assert pn.widgets.Checkbox._debounce != 0  # (Panel's own classes untouched)


def test_a_text_only_pane_sends_its_text_alone():
    from bokeh.document import Document

    from kvviz.web.live_html import LiveHTML

    pane, plain = (LiveHTML("<b>one</b>", styles={"color": "red"}),
                   pn.pane.HTML("<b>one</b>", styles={"color": "red"}))
    doc = Document()
    model, stock = pane.get_root(doc), plain.get_root(doc)
    changed: dict[str, list] = {"ours": [], "panel's": []}
    for name, m in (("ours", model), ("panel's", stock)):
        for attr in ("text", "styles", "stylesheets", "css_classes"):
            m.on_change(attr, lambda attr, _old, _new, name=name: changed[name].append(attr))
    pane.object = plain.object = "<i>two & three</i>"
    assert model.text == stock.text and "two &amp; three" in model.text  # (escaped as Panel does)
    assert changed["ours"] == ["text"] and len(changed["panel's"]) > 1


@pytest.mark.parametrize("version", ["1.10.0", "2.0.1", "1.8.9"])
def test_an_untested_panel_keeps_panels_own_classes(version):
    class Pane(pn.pane.HTML):
        pass

    class Box(pn.widgets.Checkbox):
        pass

    with pytest.warns(RuntimeWarning, match=f"panel {version} is not the tested 1.9.x .*: Pane's updates"):
        assert private_api.text_only(Pane, version) is Pane
    with pytest.warns(RuntimeWarning, match="Box's 50 ms debounce"):
        assert private_api.no_debounce(Box, version) is Box
    assert Pane._update is pn.pane.HTML._update and Box._debounce == pn.widgets.Checkbox._debounce
    before = dict(Fast._resources)
    with pytest.warns(RuntimeWarning, match="web-font link"):
        assert private_api.drop_web_fonts(version) is False
    assert Fast._resources == before


def test_a_missing_private_name_is_refused_too():
    class Bare:
        pass

    with pytest.warns(RuntimeWarning, match="has no Bare._debounce"):
        assert private_api.no_debounce(Bare, private_api.VERSIONS["panel"]) is Bare
    assert not hasattr(Bare, "_debounce")


def test_on_the_tested_versions_nothing_warns():
    class Box(pn.widgets.Checkbox):
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert private_api.no_debounce(Box)._debounce == 0
        assert private_api.refusal("bokeh", "x") is None and private_api.refusal("panel", "x") is None
    before = dict(Fast._resources)
    try:
        assert private_api.drop_web_fonts() is True and Fast._resources["font"] == {}
    finally:
        Fast._resources = before
