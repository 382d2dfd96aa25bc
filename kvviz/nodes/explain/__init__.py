"""Explain it back: the student's answer, live facts and self-checks over the three live nodes."""

from kvviz.nodes.explain import text
from kvviz.nodes.explain.state import ExplainState
from kvviz.nodes.explain.view import ExplainView
from kvviz.nodes.spec import Node

NODE = Node(key="explain", number="✎", title=text.TITLE, state=ExplainState, view=ExplainView,
            needs=("fragmentation", "paging", "radix"), live=False)
