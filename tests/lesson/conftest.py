"""The lesson's nodes, states, views, links and words, driven in Python (kvviz/nodes, kvviz/state,
kvviz/web, kvviz/lesson.py), and the README's and notebook's claims.

Shared fixtures: tests/conftest.py; this room's own, here."""
