"""Node 04 · A real engine: vLLM's KV cache live, beside kvviz's engine serving the same requests."""

from kvviz.nodes.spec import Node
from kvviz.nodes.vllm import exported, text
from kvviz.nodes.vllm.state import VllmState
from kvviz.nodes.vllm.view import VllmView

NODE = Node(key="vllm", number="04", title=text.TITLE, state=VllmState, view=VllmView, live=False,
            recipe=exported.recipe)
