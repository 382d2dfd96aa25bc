"""The recorded lesson: the recorder, its walks, the served recording and the live answers
(kvviz/export).

Shared fixtures: tests/conftest.py; this room's own, here."""
