"""Issue 28 item 7, in Python (the browser's side: tests/ui/test_page_details.py): a locked
prediction dropped, and said so, when its question changes; the chosen answer pressed; the
radix tree's labels cut to their boxes, siblings told apart; node 02's analogy a card."""

from __future__ import annotations

from kvviz.controls.prediction import CHOSEN, Prediction
from kvviz.figures.radix_tree import LOCK_NOTE, RadixTreeFigure, cut, label_chars, layout, shared_words
from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.paging import text as paging_text
from kvviz.nodes.paging.state import PagingState
from kvviz.nodes.radix.state import RadixState
from kvviz.state import predict


def test_a_prediction_whose_question_the_slider_rewrote_is_dropped_and_the_note_says_so():
    s = FragmentationState()
    assert s.predict("refused")
    s.reserve = 9
    assert s.predicted is None
    assert s.prediction_note == predict.CLEARED.format(predicted="refused")
    assert s.question().text.startswith("Predict first: with 9-block slabs")
    assert s.predict("admitted") and s.prediction_note == ""  # asked again: taken
    s.reset()
    assert s.predicted is None and s.prediction_note == ""  # Reset drops it without a word


def test_a_prediction_whose_question_holds_is_kept_and_met_by_its_action():
    s = FragmentationState()
    s.predict("refused")
    s.step()  # (the question names the slab length alone: still the same question)
    assert s.predicted is not None
    s.free_r2()
    assert s.predictions[-1].right and s.prediction_note == ""


def test_node_02_keeps_a_prediction_while_its_request_waits_and_drops_one_whose_numbers_changed():
    s = PagingState()
    s.predict("admitted")
    s.add_request()
    assert s.predicted is None and s.predictions[-1].predicted == "admitted"
    s.predict("admitted")
    before = s.question().text
    s.rewind()  # (every request queued again: the pool's free blocks, and so the question, are others)
    assert s.question().text != before
    assert s.predicted is None and "was cleared" in s.prediction_note


def test_the_chosen_answer_is_pressed_until_its_prediction_is_met():
    s = FragmentationState()
    panel = Prediction(state=s)
    s.predict("refused")
    assert (CHOSEN in panel.choices["refused"].css_classes
            and CHOSEN not in panel.choices["admitted"].css_classes)
    s.predict("admitted")
    assert (CHOSEN in panel.choices["admitted"].css_classes
            and CHOSEN not in panel.choices["refused"].css_classes)
    s.free_r2()
    assert not any(CHOSEN in b.css_classes for b in panel.choices.values())


def test_radix_labels_fit_their_boxes_and_show_what_tells_siblings_apart():
    nodes, _edges, _rows = layout(RadixState(sharing=True).snapshot)
    branches = [label for label, x in zip(nodes["label_n"], nodes["x"], strict=True) if x == 2.0]
    assert len(branches) == 4 and len(set(branches)) == 4
    assert all(b.startswith("…") and "What" not in b for b in branches)  # ("Q: What is " is shared)
    narrow, wide = label_chars(330, 3.0), label_chars(900, 3.0)
    assert 10 <= narrow < wide
    assert all(len(label) <= narrow for label in nodes["label_n"])
    assert all(len(label) <= wide for label in nodes["label"])
    assert "Q: What is a KV " in nodes["label"]  # (wide: the whole block fits)


def test_cut_keeps_the_distinguishing_words():
    texts = ["Q: What is a KV cache?", "Q: What is attention?"]
    shared = shared_words(texts)
    assert texts[0][:shared] == "Q: What is "
    assert cut(texts[0], shared, 12) == "…a KV cache?"
    assert cut(texts[0], shared, 40) == texts[0]
    assert shared_words(["one"]) == 0 and cut("a long text alone", 0, 8) == "a long …"


def test_the_radix_tree_says_what_lock_n_counts():
    s = RadixState(sharing=True)
    fig = RadixTreeFigure(snapshot=s.param.snapshot, sharing=s.param.sharing)
    assert "lock n" in LOCK_NOTE and LOCK_NOTE in fig._title_html()


def test_node_02s_analogy_is_a_card_not_folded_away():
    assert "<details" not in paging_text.ANALOGY and "The KV cache gets a page table" in paging_text.ANALOGY
