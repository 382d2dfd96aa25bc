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


def test_questions_asked_together_run_together_and_a_full_pool_keeps_the_newest():
    cache = ClassCache(seats=3)
    asked = ["one?", "two?", "one?", "  ", "three?", "four?", "five?"]
    assert cache.ask_all(asked) == 5  # (a repeat and an empty one: nothing)
    assert cache.asked == 5
    requests = cache.snapshot().requests
    kept = [r.prompt.split("Q: ")[-1].split("\n")[0] for r in requests if r.status == "finished"]
    assert kept[-1] == "five?" and "one?" not in kept  # (the oldest released for the newest)
    assert all(r.status in ("finished", "released") for r in requests)  # (every one ran to its end)
    m = cache.snapshot().metrics
    assert m.blocks_without_sharing - m.blocks_stored == SYSTEM_PROMPT_BLOCKS * (len(kept) - 1)
    assert cache.ask_all(["five?", "six?"]) == 1


def test_the_server_asks_the_class_cache_once_no_answer_waits(monkeypatch):
    """A class that pressed Enter together: their questions go to the projector's cache in one
    batch, after the last of their answers, never in between them (kvviz/serve/routes.py)."""
    from kvviz.serve import routes

    submitted: list = []
    stub = type("Stub", (), {"submit": lambda self, f: submitted.append(f)})
    monkeypatch.setattr(routes, "ANSWERING", stub())
    runs: list[list[str]] = []
    monkeypatch.setattr(routes, "class_cache",
                        lambda: type("Cache", (), {"ask_all": lambda self, qs: runs.append(list(qs))})())
    questions = routes._ClassQuestions()
    questions.waiting = 2  # (two more answers asked of the answering thread)
    questions.answered("a?")
    questions.waiting = 1
    questions.answered(None)  # (an answer that asked nothing of node 03)
    assert submitted == []
    questions.waiting = 0
    questions.answered("b?")
    assert len(submitted) == 1
    submitted[0]()
    assert runs == [["a?", "b?"]] and questions.pending == []
    questions.waiting = 5
    for k in range(questions.BATCH):
        questions.answered(f"q{k}?")
    assert len(submitted) == 2  # (a full batch goes even while answers wait)
