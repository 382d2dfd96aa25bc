"""Bokeh's wire framing and the messages the tests' protocol-level students send
(tests/bokeh_protocol_support.py), checked against what BokehJS sends as captured from Chromium;
reading a page's token and a document's models. No server: the pages themselves are opened in
tests/deploy/test_classroom_smoke.py and tests/ui/test_handin_class.py."""

from __future__ import annotations

import base64
import json

import bokeh_protocol_support as bp
import pytest


def test_a_message_is_header_metadata_content_as_bokehjs_writes_them():
    msgid, frames = bp.patch_doc([bp.button_click("p2890")])
    assert len(msgid) == 32 and msgid == msgid.upper()
    assert frames[0] == f'{{"msgid":"{msgid}","msgtype":"PATCH-DOC"}}'
    assert frames[1] == "{}"
    # byte for byte what BokehJS 3.9 sent for a click on "Add request" (captured in Chromium)
    assert frames[2] == ('{"events":[{"kind":"MessageSent","msg_type":"bokeh_event",'
                         '"msg_data":{"type":"event","name":"button_click","values":{"type":"map",'
                         '"entries":[["model",{"id":"p2890"}]]}}}]}')
    assert json.dumps(bp.model_changed("p3354", "active", True), separators=(",", ":")) == \
        '{"kind":"ModelChanged","model":{"id":"p3354"},"attr":"active","new":true}'
    assert json.dumps(bp.document_ready(), separators=(",", ":")) == (
        '{"kind":"MessageSent","msg_type":"bokeh_event","msg_data":{"type":"event","name":"document_ready",'
        '"values":{"type":"map"}}}')
    _id, frames = bp.pull_doc_req()
    assert json.loads(frames[0])["msgtype"] == "PULL-DOC-REQ" and frames[1:] == ["{}", "{}"]


def test_assembler_joins_frames_and_buffers_into_messages():
    a = bp.Assembler()
    header = json.dumps({"msgid": "p1", "msgtype": "PULL-DOC-REPLY", "reqid": "X", "num_buffers": 2})
    frames = [header, "{}", '{"doc": {}}', '{"id": "p2"}', b"\x00" * 8, '{"id": "p3"}', b"\x01" * 4]
    got = [a.feed(f) for f in frames]
    assert got[:-1] == [None] * 6
    msg = got[-1]
    assert msg.msgtype == "PULL-DOC-REPLY" and msg.json() == {"doc": {}}
    assert msg.buffers == [b"\x00" * 8, b"\x01" * 4]
    assert msg.wire_bytes == sum(len(f) if isinstance(f, bytes) else len(f.encode()) for f in frames)
    # the next message starts afresh; one without buffers is complete at its content
    ok = [a.feed(f) for f in ('{"msgid": "p4", "msgtype": "OK", "reqid": "Y"}', "{}", "{}")]
    assert ok[:2] == [None, None] and ok[2].msgtype == "OK" and ok[2].header["reqid"] == "Y"


def test_assembler_refuses_what_is_not_a_message():
    with pytest.raises(bp.ProtocolError):
        bp.Assembler().feed(b"binary first")
    a = bp.Assembler()
    a.feed('{"nomsgid": 1}')
    a.feed("{}")
    with pytest.raises(bp.ProtocolError):
        a.feed("{}")
    a = bp.Assembler()
    for f in ('{"msgid": "p1", "msgtype": "PATCH-DOC", "num_buffers": 1}', "{}", "{}"):
        a.feed(f)
    with pytest.raises(bp.ProtocolError):
        a.feed(b"payload before its buffer header")


def test_session_token_and_id_are_read_from_the_page():
    payload = base64.urlsafe_b64encode(json.dumps({"session_id": "abc123", "session_expiry": 1}).encode())
    token = payload.decode().rstrip("=")
    page = f'<script>const render_items = [{{"token":"{token}","use_for_title":false}}];</script>'
    assert bp.session_token(page) == (token, "abc123")
    with pytest.raises(LookupError):
        bp.session_token("<html>no bokeh here</html>")


def _doc() -> dict:
    """A document shaped as Panel sends the lesson's: node sections (kv-node-<key>) holding a
    button, a checkbox or a slider, a step counter and a metric card (HTML escaped, as Panel
    sends it); a navigation pane naming every node sits outside them."""
    def obj(mid, name, **attrs):
        return {"type": "object", "name": name, "id": mid, "attributes": attrs}

    def card(mid, node, label, value):
        return obj(mid, "panel.models.markup.HTML", text=(
            f'&lt;div class=&quot;kv-metric&quot; data-node=&quot;{node}&quot; '
            f'data-label=&quot;{label}&quot;&gt;'
            f'&lt;div class=&quot;kv-value&quot;&gt;{value}&lt;/div&gt;&lt;/div&gt;'))

    def counter(mid, node, step, status):
        return obj(mid, "panel.models.markup.HTML",
                   text=f"&lt;span class=&quot;kv-step&quot; data-node=&quot;{node}&quot;&gt;"
                        f"step &lt;b&gt;{step}&lt;/b&gt; · {status}&lt;/span&gt;")

    paging = obj("p10", "Column", css_classes=["kv-node", "kv-node-paging"], children=[
        obj("p11", "panel.models.widgets.Button", label="Add request", disabled=False),
        obj("p12", "panel.models.widgets.Button", label="▶ Play"),
        counter("p13", "paging", 18, "idle"), card("p14", "paging", "PAGED", "40% full"),
        obj("p15", "panel.models.markup.HTML",
            text='&lt;div class=&quot;kv-notice kv-empty&quot;&gt;&lt;/div&gt;')])
    radix = obj("p20", "Column", css_classes=["kv-node", "kv-node-radix"], children=[
        obj("p21", "panel.models.widgets.Button", label="Add request"),
        obj("p22", "Checkbox", label="Prefix sharing", active=False), card("p23", "radix", "SAVED", "0%")])
    frag = obj("p30", "Column", css_classes=["kv-node", "kv-node-fragmentation"], children=[
        obj("p31", "Slider", title="Reserved length (blocks)", value=8, start=1, end=12)])
    nav = obj("p40", "panel.models.markup.HTML",
              text='&lt;a data-node=&quot;paging&quot;&gt;&lt;a data-node=&quot;radix&quot;&gt;')
    return {"roots": [obj("p1", "Column", children=[nav, paging, radix, frag, {"id": "p11"}])]}


def test_doc_index_finds_each_nodes_widgets_and_texts():
    d = bp.DocIndex(_doc())
    assert d.find("paging", label="Add request", kinds=("Button",)) == ["p11"]
    assert d.find("radix", label="Add request", kinds=("Button",)) == ["p21"]
    assert d.find("radix", label="Prefix sharing", kinds=("Checkbox",)) == ["p22"]
    assert d.find("fragmentation", title="Reserved length", kinds=("Slider",)) == ["p31"]
    assert d.watched() == {"p13": "paging", "p14": "paging", "p15": "paging", "p23": "radix"}
    assert d.metric_cards() == {("paging", "PAGED"): "40% full", ("radix", "SAVED"): "0%"}
    assert bp.parse_step(d.text("p13")) == (18, "idle")


def test_doc_index_follows_the_servers_patches():
    d = bp.DocIndex(_doc())
    changes = d.apply([
        {"kind": "ModelChanged", "model": {"id": "p13"}, "attr": "text",
         "new": "&lt;span class=&quot;kv-step&quot; data-node=&quot;paging&quot;&gt;"
                "step &lt;b&gt;19&lt;/b&gt; · playing&lt;/span&gt;"},
        {"kind": "ModelChanged", "model": {"id": "p10"}, "attr": "children",
         "new": [{"id": "p11"}, {"type": "object", "name": "panel.models.widgets.Button", "id": "p16",
                                 "attributes": {"label": "Release oldest"}}]},
        {"kind": "ColumnsStreamed", "model": {"id": "p99"}},
    ])
    assert [(m, a) for m, a, _ in changes] == [("p13", "text"), ("p10", "children")]
    assert bp.parse_step(d.text("p13")) == (19, "playing")
    assert d.find("paging", label="Release oldest") == ["p16"]
