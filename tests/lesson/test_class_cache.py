"""The class's own cache (kvviz/nodes/radix/class_cache.py): the questions students type in node
03 held in one real engine with prefix sharing, the system prompt stored once, a branch each;
drawn for the teacher's projector with node 03's own figure (class_view.py)."""

from __future__ import annotations

from kvviz.nodes.radix.class_cache import ClassCache, question_in
from kvviz.nodes.radix.class_view import ClassTreeView
from kvviz.nodes.radix.scenario import SYSTEM_PROMPT_BLOCKS


def test_the_newest_question_of_a_link_is_its_last_ask():
    assert question_in([("node", "radix"), ("op", "ask:What is a page?"), ("op", "release"),
                        ("op", "ask:Why blocks?")]) == "Why blocks?"
    assert question_in([("node", "radix"), ("sharing", "1")]) is None


def test_questions_share_the_system_prompt_once_and_a_repeat_adds_nothing():
    cache = ClassCache(seats=4)
    assert cache.snapshot() is None
    assert cache.ask("What is a page?") and cache.ask("Why are blocks fixed size?")
    assert not cache.ask("  What is a   page? ")  # (the same question, spaced otherwise)
    m = cache.snapshot().metrics
    assert cache.asked == 2
    # (the trunk stored once, not twice)
    assert m.blocks_without_sharing - m.blocks_stored == SYSTEM_PROMPT_BLOCKS
    assert m.saved > 0


def test_a_full_cache_releases_the_oldest_answers_first():
    cache = ClassCache(seats=2)
    for q in ("first question?", "second question?", "third question?", "fourth question?"):
        assert cache.ask(q)
    live = [r for r in cache.snapshot().requests if r.status == "finished"]
    assert [r.prompt.split("Q: ")[-1].split("\n")[0] for r in live][-1] == "fourth question?"
    assert "first question?" not in " ".join(r.prompt for r in live)
    assert cache.ask("first question?")  # (released: it can be asked again)


def test_the_projector_view_waits_for_a_question_then_draws_the_tree_and_cards():
    cache = ClassCache(seats=3)
    view = ClassTreeView(cache=cache)
    assert "No question typed yet" in view.empty.object and view.tree is None
    cache.ask("<b>bold</b> question?")
    view.refresh()
    assert view.tree is not None and view.empty.object == ""
    m = cache.snapshot().metrics
    assert (f"<dt>BLOCKS STORED</dt><dd>{m.blocks_stored} blk</dd>" in view.cards.object
            and "SAVED" in view.cards.object)
    assert "<dt>QUESTIONS ASKED</dt><dd>1</dd>" in view.cards.object
    cache.ask("a second question?")
    view.refresh()
    assert "<dt>QUESTIONS ASKED</dt><dd>2</dd>" in view.cards.object
    labels = list(view.tree.nodes.data["text"])
    assert any("<b>bold</b>" in str(t) for t in labels)  # (a Bokeh text glyph: plain text, never HTML)
    view.refresh()  # (nothing new: nothing redrawn)
