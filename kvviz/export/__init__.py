"""A static export of the lesson that replays the real engine with no server:
`python -m kvviz.export OUT_DIR`.

record.py records every state a node's controls reach, each node's recipe.py says which (types in
kvviz/nodes/recipe.py), player.py replays them in the browser, site.py writes the pages
(docs/architecture.md, "The recorded lesson").
"""
