"""Each node's state in the URL (kvviz/urlstate.py): parsing with a notice for anything
malformed, and links that restore exactly the state they were copied from."""

from __future__ import annotations

import pytest
from kvviz_support import play_until_idle

from kvviz import formatting as fmt
from kvviz import urlstate
from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.paging.state import PagingState
from kvviz.nodes.radix.state import RadixState


def states(frag, paging, radix) -> dict:
    return {"fragmentation": frag, "paging": paging, "radix": radix}


def field(s: urlstate.UrlState, name: str):
    """A parsed field, from whichever node's link holds it (`node` and `notices` are the URL's)."""
    if name in ("node", "notices"):
        return getattr(s, name)
    (value,) = [getattr(link, name) for link in s.links.values() if hasattr(link, name)]
    return value


def test_url_parses_good_params():
    s = urlstate.parse_search("?node=paging&reserve=12&free_r2=1&add=a&add=b&sharing=1&op=ask:Q&op=release"
                              "&show=R2")
    assert [field(s, k) for k in ("node", "reserve", "free_r2", "add", "sharing", "show")] == [
        "paging", 12, True, ["a", "b"], True, "R2"]
    assert field(s, "ops") == [("ask", "Q"), ("release", "")]
    assert s.notices == []


@pytest.mark.parametrize("search, name, default", [
    ("?node=bogus", "node", None), ("?reserve=abc", "reserve", 8), ("?reserve=99", "reserve", 8),
    ("?reserve=0", "reserve", 8), ("?sharing=maybe", "sharing", False), ("?show=<b>", "show", None),
])
def test_url_malformed_param_falls_back_with_a_notice(search, name, default):
    s = urlstate.parse_search(search)
    assert field(s, name) == default
    assert len(s.notices) == 1


@pytest.mark.parametrize("search", ["?reserve=²", "?reserve=" + "9" * 5000, "?add=a&add_gap=².1",
                                    "?op=release&op_gap=" + "1" * 5000, "?show=R²"])
def test_url_numbers_that_python_would_choke_on_fall_back_with_a_notice(search):
    s = urlstate.parse_search(search)
    assert [field(s, k) for k in ("reserve", "add_gap", "op_gap", "show")] == [8, None, None, None]
    assert len(s.notices) == 1


@pytest.mark.parametrize("search, value",
                         [("?free_r2=yes", True), ("?sharing=2", False), ("?sharing=on", True),
                                           ("?free_r2=", False), ("?sharing=no", False)])
def test_url_flags_other_than_1_or_0_are_read_with_a_notice_alike(search, value):
    s = urlstate.parse_search(search)
    assert field(s, search[1:].split("=")[0]) is value
    assert len(s.notices) == 1 and "1 or 0" in s.notices[0]


def test_whole_number_reads_only_short_ascii_numbers():
    assert [fmt.whole_number(t) for t in ("12", "-3", "0")] == [12, -3, 0]
    assert [fmt.whole_number(t) for t in ("", "-", "²", "1.5", " 4", "9" * 7)] == [None] * 6


def test_url_round_trip_reproduces_the_state(frag, paging, radix, hostile):
    frag.reserve = 5
    frag.free_r2()
    paging.add_request(hostile)
    play_until_idle(paging)
    radix.sharing = True
    radix.release_oldest()
    radix.add_request("What is a block?", settle=True)
    q = urlstate.query(None, states(frag, paging, radix))
    f2, p2, r2 = FragmentationState(), PagingState(), RadixState()
    assert urlstate.restore(urlstate.parse_search(q), states(f2, p2, r2)) == []
    assert f2.snapshot == frag.snapshot
    assert p2.paged == paging.paged and p2.contiguous == paging.contiguous
    assert r2.snapshot == radix.snapshot


def test_link_replays_a_request_added_while_another_was_generating(frag, paging, radix):
    paging.add_request()
    paging.tick()
    paging.add_request()  # the first is still generating: the two share the next steps
    play_until_idle(paging)
    radix.sharing = True
    radix.add_request("Why share?")
    radix.tick()
    radix.release_oldest()  # a finished request, released while the question runs
    radix.add_request("And evict?")
    play_until_idle(radix)
    q = urlstate.query(None, states(frag, paging, radix))
    assert "add_gap=" in q and "op_gap=" in q
    f2, p2, r2 = FragmentationState(), PagingState(), RadixState()
    assert urlstate.restore(urlstate.parse_search(q), states(f2, p2, r2)) == []
    assert p2.paged == paging.paged and p2.contiguous == paging.contiguous
    assert r2.snapshot == radix.snapshot
    assert (p2.step_count, r2.step_count) == (paging.step_count, radix.step_count)
    settled = PagingState()  # the same link without its step counts: the blocks land elsewhere
    urlstate.restore(urlstate.parse_search(q.replace("add_gap=", "x=")),
                     states(FragmentationState(), settled, RadixState()))
    assert settled.paged != paging.paged


def test_link_without_step_counts_runs_each_request_to_the_end_first(paging):
    paging.add_request(settle=True)
    paging.add_request(settle=True)
    q = urlstate.query(None, states(FragmentationState(), paging, RadixState()))
    p2 = PagingState()
    hand_written = "&".join(part for part in q.lstrip("?").split("&") if not part.startswith("add_gap="))
    assert urlstate.restore(urlstate.parse_search(hand_written),
                            states(FragmentationState(), p2, RadixState())) == []
    assert p2.paged == paging.paged and not p2.playing


@pytest.mark.parametrize("gaps", [["x.1"], ["1"], ["1.2", "3.4"], ["99999.1"], ["-1.0"]])
def test_malformed_step_counts_are_ignored_with_a_notice(gaps):
    s = urlstate.parse({"add": ["Pages"], "add_gap": gaps})
    assert field(s, "add") == ["Pages"] and field(s, "add_gap") is None
    assert len(s.notices) == 1 and "add_gap" in s.notices[0]


def test_step_counts_beyond_the_run_are_a_notice_not_an_error():
    p = PagingState()
    notices = urlstate.restore(urlstate.parse({"add": ["Pages"], "add_gap": ["500.500"]}),
                               states(FragmentationState(), p, RadixState()))
    assert len(notices) == 1 and "ran out of work" in notices[0]
    assert p.added == []


def test_a_request_added_at_the_first_step_restores_there():
    """Rewind, then Add request: the link's request comes 0 steps after the first two."""
    live = PagingState()
    live.rewind()
    live.add_request(settle=True)
    p = PagingState()
    assert urlstate.restore(urlstate.parse({"add": live.added, "add_gap": live.added_gaps}),
                            states(FragmentationState(), p, RadixState())) == []
    assert live.added_gaps == ["0.0"] and p.paged == live.paged and p.step_count == live.step_count


def test_default_state_has_an_empty_query(frag, paging, radix):
    assert urlstate.query(None, states(frag, paging, radix)) == ""


def test_a_request_added_before_the_run_ended_restores_from_its_link():
    """Step back, then Add request: the link says the request came 23 steps after the last one. A
    new page (whose node 02 is settled, 24 steps in) restores it from the start, with no notice,
    to the state the student saw; a second request added after it too."""
    live = PagingState()
    live.step_back()
    live.add_request(settle=True)
    live.add_request(settle=True)
    link = urlstate.query(None, states(FragmentationState(), live, RadixState()))
    assert "add_gap=" in link
    restored = states(FragmentationState(), PagingState(), RadixState())
    notices = urlstate.restore(urlstate.parse_search("?" + link), restored)
    assert notices == []
    new = restored["paging"]
    assert [(r.name, r.prompt, r.status) for r in new.paged.requests] == \
           [(r.name, r.prompt, r.status) for r in live.paged.requests]
    assert new.step_count == live.step_count and new.paged.metrics == live.paged.metrics
    assert new.contiguous.metrics == live.contiguous.metrics
