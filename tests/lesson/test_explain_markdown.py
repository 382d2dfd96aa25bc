"""Explain it back's download (kvviz/nodes/explain/markdown.py): a readable Markdown answer with
the predictions and self-checks as tables and the data in a JSON block at its end; rendered by a
CommonMark renderer that passes raw HTML through (markdown-it-py, Panel's own), a hostile answer,
prediction or question stays text and cannot break a table."""

from __future__ import annotations

import json

import pytest
from markdown_it import MarkdownIt

from kvviz.nodes.explain import markdown
from kvviz.nodes.explain.state import ExplainState
from kvviz.state.predict import ResolvedPrediction

HOSTILE = ("<img src=x onerror=alert(1)> | a|b ` ``` `code` [link](javascript:alert(1)) *em* _u_ ~~s~~ "
           "&lt;b&gt; <script>alert(1)</script> ![i](x) \\| end")


def render(md: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(md)


def data(md: str) -> dict:
    return json.loads(md.split("```json\n")[1].split("\n```")[0])


@pytest.fixture
def explain(frag, paging, radix):
    ex = ExplainState(frag, paging, radix)
    ex.answer = "Paging is like virtual memory."
    frag.predict("admitted")
    frag.free_r2()
    ex.check("gap_after_free", str(ex.engine_answer("gap_after_free")))
    return ex


def test_the_answer_reads_as_markdown_with_tables_and_the_data_at_the_end(explain):
    md = explain.markdown()
    assert md.startswith("# Managing the KV cache: my answer\n")
    assert "## My answer\n\nPaging is like virtual memory.\n" in md
    assert "| # | Node | Question | Predicted | Engine | Right |" in md
    assert "| admitted | refused | ✗ no |" in md and "| 8 | 8 | ✓ yes |" in md
    assert "- (1) After R2's release 16 blocks are free" in md
    assert md.rstrip().endswith("```") and md.index("## The same, as data") > md.index("## Self-checks")
    record = data(md)
    assert record["answer"] == explain.answer
    assert [ResolvedPrediction.from_json(p) for p in record["predictions"]] == explain.predictions
    assert record["fragmentation"]["metrics"]["blocks_reserved_empty"] == 8
    html = render(md)
    assert html.count("<table>") == 2 and html.count("<tr>") == 4  # a header and one row each
    assert len(md.splitlines()) < 70


def test_nothing_predicted_yet_says_so(frag, paging, radix):
    md = ExplainState(frag, paging, radix).markdown()
    assert "*(no answer written yet)*" in md and "*(none made yet)*" in md and "*(none answered yet)*" in md
    assert data(md)["predictions"] == []


def test_hostile_text_stays_text_and_keeps_its_table_cell():
    entry = ResolvedPrediction(node=HOSTILE, question=HOSTILE, predicted=HOSTILE, outcome=HOSTILE,
                               right=False, why=HOSTILE)
    md = markdown.document(HOSTILE, HOSTILE, f"{HOSTILE}\n# heading?\n- list?\n1. list?\n    code?\n> quote?",
                           [entry], [entry], [HOSTILE], {"answer": HOSTILE})
    html = render(md)
    for made in ("<img", "<script", "<a ", "<code>", "<em>", "<strong>", "<s>", "<b>", "<h2>heading",
                 "<li>list", "<pre><code>code"):
        assert made not in html, made
    assert html.count("<blockquote>") == 1 and html.count("<pre>") == 1  # the question's; the data's
    assert html.count("<table>") == 2 and html.count("<td>") == 12  # six cells a row, whatever the text
    assert html.count("&lt;img src=x onerror=alert(1)&gt;") >= 9
    assert data(md) == {"answer": HOSTILE}  # the fence holds: backticks inside are \u0060
    assert "`" not in md.split("```json\n")[1].split("\n```")[0]


def test_the_answers_lines_are_kept():
    assert render(markdown.block("one\ntwo\n\nthree")) == "<p>one<br />\ntwo</p>\n<p>three</p>\n"
