"""Node 02 · PagedAttention: the same requests into a contiguous pool and a paged one."""

from kvviz.nodes.paging import recipe, text, url
from kvviz.nodes.paging.state import PagingState
from kvviz.nodes.paging.view import PagingView
from kvviz.nodes.spec import Node

NODE = Node(key="paging", number="02", title=text.TITLE, state=PagingState, view=PagingView,
            cards=text.CARDS, url=url, recipe=recipe.recipe)
