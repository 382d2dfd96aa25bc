"""The lesson's self-checks and predictions, without a browser: Explain it back's checks answered by
the engine after the student, each node's predictions met by the engine's outcome (and its own
arithmetic when wrong), and node 01's story at every reserved length."""

from __future__ import annotations

import json

from kvviz import formatting as fmt
from kvviz.nodes.explain.state import ExplainState
from kvviz.nodes.fragmentation.scenario import FragmentationScenario
from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.radix.scenario import RadixScenario
from kvviz.state.predict import ResolvedPrediction


# -- explain it back ------------------------------------------------------------------------
def test_self_checks_are_answered_by_the_engine_after_the_student(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    frag.reserve = 6  # R4 then fits in the free tail, so the longest run after freeing R2 is R2's hole
    truth = FragmentationScenario(6)
    truth.free_r2()
    assert ex.engine_answer("gap_after_free") == truth.snapshot().metrics.largest_free_run == 6
    assert frag.snapshot.metrics.largest_free_run == 14 and not frag.freed_r2  # (node 01 itself: untouched)
    assert ex.check("gap_after_free", "6")
    assert ex.feedback["gap_after_free"].startswith("Right: you said 6, the engine says 6.")
    assert ex.responses["gap_after_free"].question == ex.question("gap_after_free")


def test_a_self_check_answer_is_committed_until_the_node_changes_the_question(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    assert not ex.check("empty_other_reserve", "3")  # 8 -> "if the slabs were 10": 18 empty
    assert ex.responses["empty_other_reserve"].outcome == "18"
    assert not ex.check("empty_other_reserve", "18")  # the first answer stands
    assert "already" in ex.feedback["empty_other_reserve"]
    frag.reserve = 10  # a new question: "if the slabs were 6"
    assert ex.is_open("empty_other_reserve")
    assert ex.check("empty_other_reserve",
                    str(FragmentationScenario(6).snapshot().metrics.blocks_reserved_empty))


def test_self_checks_for_nodes_02_and_03_run_on_copies_of_their_engines(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    before = (paging.contiguous, paging.paged, radix.snapshot)
    more = ex.engine_answer("adds_before_refusal")
    for _ in range(more):
        paging.add_request(settle=True)
    assert paging.contiguous.metrics.rejected == 0
    paging.add_request(settle=True)
    assert paging.contiguous.metrics.rejected == 1  # the engine's answer, played out on the node itself
    assert (ex.engine_answer("stored_switched")
            == RadixScenario(prefix_sharing=True).snapshot().metrics.blocks_stored)
    assert radix.snapshot == before[2] and not radix.sharing


def test_facts_withhold_an_open_checks_answer_until_it_is_given(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    radix.sharing = True  # now the facts would say 36 blocks without sharing: the answer for "switched off"
    assert ex.engine_answer("stored_switched") == 36
    assert not any("36" in fact for fact in ex.facts()) and any("withheld" in fact for fact in ex.facts())
    ex.check("stored_switched", "20")
    assert any("against 36 without sharing" in fact for fact in ex.facts())


def test_self_check_answer_that_python_would_choke_on_gets_a_message(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    for typed in ("²", "9" * 5000, "lots"):
        assert not ex.check("gap_after_free", typed)
        assert "whole number" in ex.feedback["gap_after_free"]
    assert ex.is_open("gap_after_free") and ex.responses == {}


def test_node_predictions_meet_the_engines_outcome_and_reach_explain_it_back(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    assert not frag.predict("maybe") and "Choose one of" in frag.prediction_note
    assert frag.predict("admitted")
    frag.free_r2()
    assert frag.predictions[-1].to_json() == {"node": "fragmentation",
                                              "question": frag.predictions[-1].question,
                                              "predicted": "admitted", "outcome": "refused", "right": False,
                                              "why": frag.explain()}
    assert frag.question() is None and frag.predicted is None
    assert radix.predict("18")
    radix.sharing = True
    assert radix.predictions[-1].outcome == "18" and radix.predictions[-1].right
    ex.check("gap_after_free", "8")
    assert [p.node for p in ex.predictions] == ["fragmentation", "radix", "fragmentation"]
    assert all(set(p.to_json()) == {"node", "question", "predicted", "outcome", "right", "why"}
               for p in ex.predictions)


def test_a_prediction_for_a_request_added_while_playing_waits_for_its_admission(paging):
    for _ in range(2):  # 8 of the 20 free blocks left: one more slab fits
        paging.add_request(settle=True)
    assert paging.predict("refused")
    paging.add_request()  # admitted at once (a step is taken): resolved now
    assert paging.predictions[-1].outcome == "admitted" and not paging.predictions[-1].right
    assert paging.predict("admitted")
    paging.add_request()  # added while the first is playing: it waits for the next tick
    assert paging.predicted and paging.scenario.contiguous.snapshot().requests[-1].status == "waiting"
    paging.tick()
    assert paging.predicted is None and paging.predictions[-1].outcome == "refused"


def test_download_holds_the_answer_the_predictions_and_the_state(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    ex.answer = "Paging is like virtual memory."
    frag.predict("refused")
    frag.free_r2()
    md = ex.markdown()
    assert "Paging is like virtual memory." in md
    assert "| refused | refused | ✓ yes |" in md
    record = json.loads(md.split("```json\n")[1].split("```")[0])
    assert record["fragmentation"]["metrics"]["blocks_reserved_empty"] == 8  # R2 freed: R1 and R3 hold 4 each
    assert record["radix"]["metrics"]["blocks_without_sharing"] == 36
    assert record["predictions"] == [p.to_json() for p in ex.predictions]


# -- node 01: every reserved length tells one story ------------------------------------------
def test_slabs_filled_falls_as_the_reservation_rises():
    filled = {r: FragmentationState(reserve=r).snapshot.metrics for r in range(3, 17)}
    shown = [int(fmt.slabs_filled(m).rstrip("%")) for m in filled.values()]
    assert shown == sorted(shown, reverse=True) and shown[0] > 90 and shown[-1] < 30
    assert fmt.slabs_filled(filled[8]) == "47%"  # 60 + 60 + 60 tokens in 3 slabs of 8 x 16 slots
    assert len({fmt.in_use(filled[r]) for r in range(4, 11)}) == 1  # while IN USE stays put
    assert fmt.slabs_filled(FragmentationState(reserve=1).snapshot.metrics) == "–"  # no slab held


def test_every_reserved_length_gives_a_coherent_headline_question_and_free_r2():
    from kvviz.figures.request_list import headline_html
    from kvviz.nodes.fragmentation import text

    for reserve in range(1, 17):
        frag = FragmentationState(reserve=reserve)
        snap, head = frag.snapshot, headline_html(frag.snapshot)
        refused = [r.name for r in snap.requests if r.status == "refused"]
        for name in refused:  # the headline names every refused request
            assert name in head, (reserve, head)
        if reserve == 1:
            assert "All 3 requests refused (R1, R2, R3)." in head
        r2_ran = "R2" not in refused
        assert (frag.question() is not None) == r2_ran, reserve  # never a question about an R2 that never ran
        assert bool(frag.free_r2_off) != r2_ran, reserve
        if not r2_ran:
            assert frag.free_r2_off == text.NO_R2.format(why=snap.request("R2").reason)
        cut = snap.metrics.cut_off
        # the Try-it's claims: CUT OFF below 4 (where a slab is held), a prompt too long for its slab below 3
        assert (cut > 0) == (2 <= reserve <= 3), (reserve, cut)
        assert bool(refused) == (reserve < 3 or reserve > 10), (reserve, refused)


def test_changing_the_length_drops_a_prediction_locked_for_the_old_one(frag):
    assert frag.predict("refused") and frag.predicted
    frag.reserve = 1
    assert frag.predicted is None and frag.question() is None
    frag.reserve = 6
    assert "6-block slabs" in frag.question().text


def test_free_r2_done_turns_its_button_off_with_the_reason(frag):
    assert frag.free_r2_off == ""
    frag.free_r2()
    assert frag.freed_r2 and "Reset" in frag.free_r2_off
    frag.reset()
    assert frag.free_r2_off == ""


# -- a prediction answered with the engine's own arithmetic ----------------------------------
def test_a_wrong_blocks_stored_is_answered_with_shared_plus_own(radix):
    from kvviz.state import predict

    assert radix.predict("9")
    radix.sharing = True
    entry = radix.predictions[-1]
    assert (entry.outcome, entry.right) == ("18", False)
    assert "6 shared + 4 × 3 own = 18" in predict.verdict(entry)
    assert fmt.stored_sum(radix.snapshot).endswith(f"= {radix.snapshot.metrics.blocks_stored}")


def test_wrong_predictions_of_nodes_01_and_02_give_the_engines_numbers(frag, paging):
    from kvviz.state import predict

    assert frag.predict("admitted")
    frag.free_r2()
    said = predict.verdict(frag.predictions[-1])
    assert said.startswith("You predicted admitted; the engine: refused. Not this time: ")
    assert "16 blocks are free, but the longest run of them is 8, short of the 12 in a row R4 needs" in said
    assert paging.predict("refused") and paging.add_request(settle=True)
    said = predict.verdict(paging.predictions[-1])
    assert "room for its 6-block slab: it got blocks 12–17, leaving 14 free" in said
    for _ in range(2):
        paging.add_request(settle=True)
    assert paging.predict("admitted") and paging.add_request(settle=True)
    said = predict.verdict(paging.predictions[-1])
    assert (
        "in the contiguous pool, R6 needs 6 consecutive blocks; only 2 are free. The paged pool "
        "admitted it" in said)
    assert not any("look at the picture" in predict.verdict(e) for e in frag.predictions + paging.predictions)


def test_reset_hides_the_old_verdict_but_keeps_the_record(frag):
    from kvviz.controls.prediction import shows_verdict, status_html

    frag.predict("refused")
    frag.free_r2()
    assert shows_verdict(frag) and "Right: after R2&#x27;s release" in status_html(frag)
    frag.reset()
    assert not shows_verdict(frag) and "kv-empty" in status_html(frag)
    assert len(frag.predictions) == 1  # (still in the download and the hand-in)
    frag.predict("admitted")
    frag.free_r2()
    assert shows_verdict(frag) and "Not this time" in status_html(frag)


def test_the_predictions_list_names_each_node_once():
    from kvviz.nodes import OUTLINE
    from kvviz.nodes.explain.view import predictions_html

    entries = [ResolvedPrediction(node="fragmentation", question="Node 01, 8-block slabs: what?",
                                  predicted="8", outcome="8", right=True, why="w"),
               ResolvedPrediction(node="radix", question="Predict first: how many?", predicted="9",
                                  outcome="18", right=False, why="6 shared + 4 × 3 own = 18")]
    out = predictions_html(entries, OUTLINE)
    assert "Node 01: Node 01" not in out and "Node 01, 8-block slabs" in out
    assert "Node 03: Predict first" in out and "6 shared + 4 × 3 own = 18" in out
