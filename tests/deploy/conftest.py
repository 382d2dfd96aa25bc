"""Serving a class: the launchers, nginx's limits, several machines, the requirements per platform, and
the benchmarks' own checks (deploy/, kvviz/cli.py, benchmarks/).

Shared fixtures: tests/conftest.py; this room's own, here."""
