"""Node 03 · RadixAttention: requests that share a prefix share its cached blocks."""

from kvviz.nodes.radix import recipe, text, url
from kvviz.nodes.radix.state import RadixState
from kvviz.nodes.radix.view import RadixView
from kvviz.nodes.spec import Node

NODE = Node(key="radix", number="03", title=text.TITLE, state=RadixState, view=RadixView,
            cards=text.CARDS, url=url, recipe=recipe.recipe)
