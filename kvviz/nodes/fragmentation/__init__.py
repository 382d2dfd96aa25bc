"""Node 01 · fragmentation: contiguous slabs waste memory inside and between them."""

from kvviz.nodes.fragmentation import recipe, text, url
from kvviz.nodes.fragmentation.state import FragmentationState
from kvviz.nodes.fragmentation.view import FragmentationView
from kvviz.nodes.spec import Node

NODE = Node(key="fragmentation", number="01", title=text.TITLE, state=FragmentationState,
            view=FragmentationView, cards=text.CARDS, url=url, recipe=recipe.recipe)
