"""kvviz: the KV-cache lesson's state, views and text, driven by the engine.

In a Jupyter notebook, `kvviz.node("paging")` shows a node live on the kernel's engine and
`kvviz.node("fragmentation", recorded=True)` its recording, played in the browser
(kvviz/notebook.py). Importing the package imports nothing else: `node` imports what it needs.
"""


def node(key: str, recorded: bool = False):
    """Node `key` for a notebook's output (kvviz/notebook.py: `node`)."""
    from kvviz.notebook import node as shown

    return shown(key, recorded=recorded)
