"""The house's own rules: the import layers, mypy --strict, every JavaScript file parses, the files' sizes.

Shared fixtures: tests/conftest.py; this room's own, here."""
