"""What no recording holds, run by this process's engine and answered as a branch to play
(kvviz/serve/live.py): the same models as the page's, every input checked, the engine's state."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re

import numpy as np
import pytest

from kvviz import urlstate
from kvviz.export import cache
from kvviz.export.page import build_page
from kvviz.export.page_models import FRAMES_FILE, model_order, page_config
from kvviz.export.recipes import recipes
from kvviz.export.reuse import walks
from kvviz.export.site import provenance
from kvviz.nodes.radix import url as radix_url
from kvviz.nodes.radix.state import RadixState
from kvviz.serve.live import MAX_QUERY, Service

MEASURED = re.compile(r"\d+(?:\.\d+)? ms")  # (node 03's prefill time: this machine's clock)


@pytest.fixture(scope="module")
def service():
    return Service(cache.make(), recipes())  # (this code's recording: made once, shared by the tests)


def ask(service, query: str) -> tuple[int, dict]:
    status, body = service.answer(query)
    return status, json.loads(gzip.decompress(body))


def stored(answer: dict, row: list[int]) -> str:
    """BLOCKS STORED as a state of the answer shows it (the card's text, as the page gets it)."""
    for vi in row:
        v = answer["values"][vi]
        if isinstance(v, str) and "data-label=&quot;BLOCKS STORED" in v:
            return re.findall(r'kv-value">([^<]*)<', html.unescape(v))[0]
    raise AssertionError("no BLOCKS STORED card in the state")


def test_a_live_view_holds_the_same_models_in_the_same_order_as_the_page(service):
    """A model is named across processes by its place: the page's and the live view's agree on
    every node, and the recorded properties the page lists are the ones written beside it.

    Node 03's page walks its states again here (2 s): a fresh walk records the properties written.
    Nodes 01 and 02 (35 s of walking in one process) are built from the recording's own walks, as
    the static site is (`walks`); that walks in pieces on several workers equal one walk is
    tests/export/test_walk.py's."""
    folder = cache.make()
    written = json.loads((folder / FRAMES_FILE).read_text())
    recorded = walks(folder)
    for key in ("fragmentation", "paging", "radix"):
        with page_config():
            doc, scripts, placed = build_page([key], None, provenance(), served=True,
                                              walked=None if key == "radix" else recorded)
        column = next(m for m in doc.models
                      if f"kv-recorded-{key}" in (getattr(m, "css_classes", None) or []))
        order = [m.id for m in model_order(column)]
        page = [type(doc.get_model_by_id(mid)).__name__ for mid in order]
        service.warm(key)
        assert [type(m).__name__ for m in service.frames[key].models] == page
        # (the page's own recording holds those properties, on its models by their places)
        text = "".join(scripts)
        start = f"window.kvvizPlayer.register({json.dumps(key)}, "
        packed, _at = json.JSONDecoder().raw_decode(text, text.index(start) + len(start))
        rec = json.loads(gzip.decompress(base64.b64decode(packed)))
        assert [[order.index(mid), attr] for mid, attr in rec["props"]] == placed[key]
        # The properties written beside the pages, in their order. The order lists each property
        # where it first changed: a measured time (node 03's prefill time, walked again here) may
        # first change at another state in another walk, so its place in the order is left aside.
        timed = {i for i, value in enumerate(rec["values"]) if MEASURED.search(str(value))}  # (once each)
        measured = {tuple(placed[key][k]) for k in range(len(placed[key]))
                    if any(row[k] in timed for rows in rec["branches"].values() for row in rows)}
        assert sorted(map(tuple, placed[key])) == sorted(map(tuple, written[key]))
        assert [p for p in placed[key] if tuple(p) not in measured] == \
               [p for p in written[key] if tuple(p) not in measured]
        assert len(measured) <= (1 if key == "radix" else 0)


def test_a_question_is_run_by_the_engine_and_answered_with_every_state(service, monkeypatch):
    status, answer = ask(service, "node=radix&sharing=1&op=ask%3AWhat+is+a+slab%3F")
    assert status == 200 and answer["ok"]
    assert answer["steps"] == list(range(len(answer["rows"])))  # (from its start to its settled end)
    assert "op=ask%3AWhat+is+a+slab%3F" in answer["link"] and "sharing=1" in answer["link"]
    live, notices = RadixState(), []
    radix_url.restore(live, urlstate.parse_search("?" + answer["link"]).links["radix"], notices)
    assert stored(answer, answer["rows"][-1]) == f"{live.snapshot.metrics.blocks_stored} blk"
    assert stored(answer, answer["rows"][0]) == "0 blk"
    assert all(len(row) == answer["n"] + len(answer["props"]) for row in answer["rows"])
    # the same question again: the same answer, kept (not run again)
    monkeypatch.setattr(service.frames["radix"], "branch", lambda *a, **k: pytest.fail("ran again"))
    assert ask(service, "node=radix&sharing=1&op=ask%3AWhat+is+a+slab%3F") == (status, answer)


def test_a_link_with_sharing_on_builds_its_engine_once(service, monkeypatch):
    """A branch starts from the defaults with the link's settings (the url module's `start`): node 03
    with sharing on is built with sharing at once, not without it and then again with it."""
    from kvviz.nodes.radix import state as radix_state

    service.warm("radix")  # (its frames built first: their state starts at the defaults)
    built = []
    real = radix_state.new_scenario
    monkeypatch.setattr(radix_state, "new_scenario", lambda cls, *a: built.append(a) or real(cls, *a))
    status, answer = ask(service, "node=radix&sharing=1&op=ask%3AWhat+is+a+page%3F")
    assert status == 200 and answer["ok"] and "sharing=1" in answer["link"]
    assert built == [(True,)]
    built.clear()
    assert ask(service, "node=radix&op=ask%3AWhat+is+a+page%3F")[0] == 200 and built == [(False,)]


def test_a_button_is_done_to_the_nodes_own_widget(service):
    status, answer = ask(service, "node=radix&sharing=1&act=do-release_oldest")
    assert status == 200 and "op=release" in answer["link"]
    live = RadixState(sharing=True)
    live.release_oldest()
    assert stored(answer, answer["rows"][-1]) == f"{live.snapshot.metrics.blocks_stored} blk"
    status, answer = ask(service, "node=paging&act=in-request&value=R2")
    assert status == 200 and "show=R2" in answer["link"]


@pytest.mark.parametrize(("query", "says"), [
    ("node=nope", "no recorded node"),
    ("node=explain", "no recorded node"),
    ("node=radix&act=Delete+everything", "is not something node 03 can do"),
    ("node=radix&act=" + "x" * 80, "too long"),
    ("node=paging&act=in-request&value=R99", "has no choice"),
    ("node=radix&extra=__class__.mro", "should not"),
    ("node=radix&op=" + "x" * MAX_QUERY, "too long"),
])
def test_bad_requests_are_refused_with_a_sentence(service, query, says):
    status, answer = ask(service, query)
    assert status == 400 and not answer["ok"] and says in answer["message"]


def test_a_bad_link_value_is_a_notice_not_a_failure(service):
    status, answer = ask(service, "node=radix&sharing=maybe&op=%3Cscript%3E")
    assert status == 200 and answer["ok"] and answer["notices"]
    assert "sharing" not in answer["link"] and "script" not in answer["link"]


def test_an_action_after_a_state_the_page_holds_records_only_the_steps_from_there(service):
    """`from`: the page keeps its own states before the action; the server's branch from that
    step on is the same, state for state, as the whole branch's end."""
    q = "node=radix&sharing=1&op=ask%3AWhat+is+a+cache%3F"
    _s, whole = ask(service, q)
    start = 21  # (node 03 with sharing settles at step 21: the recorded branch's end)
    _s, part = ask(service, q + f"&from={start}")
    assert part["from"] == start and part["steps"] == [s for s in whole["steps"] if s >= start]

    def decoded(answer, row):
        return [json.dumps(answer["values"][vi], sort_keys=True) for vi in row]

    tail = whole["rows"][len(whole["rows"]) - len(part["rows"]):]
    assert [decoded(part, r) for r in part["rows"]] == [decoded(whole, r) for r in tail]
    assert ask(service, q + "&from=x1")[0] == 400


def test_a_self_check_about_a_students_own_run_is_answered_by_the_engine(service):
    """Explain it back on the played page asks the server once for a run no recording holds
    (kvviz/export/checks.js): the question and the engine's answer are the live lesson's."""
    from urllib.parse import parse_qs

    from kvviz.lesson import Lesson

    query = "reserve=12&free_r2=1"
    status, answer = ask(service, f"node=fragmentation&{query}&check=gap_after_free")
    explain = Lesson(parse_qs(query)).states["explain"]
    assert status == 200 and answer["asked"]["gap_after_free"] == {
        "question": explain.question("gap_after_free"), "answer": explain.engine_answer("gap_after_free")}
    assert set(answer["facts"]) == {"frag_use", "frag_gap"}
    status, answer = ask(service, "node=fragmentation&check=stored_switched")  # (node 03's check)
    assert status == 400 and "no such self-check" in answer["message"]


def test_an_answer_is_gzipped_json_that_reads_back_as_what_was_answered():
    from kvviz.serve.live import gz

    answer = {"ok": True, "values": [0.1, 1e-05, 2.5e20, -3, None, True, "<b>R1</b> · “x” \u2028", [1, 2]],
              "rows": [[0, 1], [1, 0]], "facts": {"map": {"12": {"nd": "f", "v": [0.5, None]}}}}
    assert json.loads(gzip.decompress(gz(answer))) == answer
    # numpy's numbers, which the engine's snapshots hold, are written as the numbers they are
    numbers = {"v": [np.float64(0.25), np.int64(7), np.float32(0.5), np.bool_(True)]}
    assert json.loads(gzip.decompress(gz(numbers))) == {"v": [0.25, 7, 0.5, True]}
