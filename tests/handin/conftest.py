"""Hand-ins and the class the teacher runs: the store on SQLite and PostgreSQL, the pulse, the roster
and the class state (kvviz/handin).

Shared fixtures: tests/conftest.py; this room's own, here."""
