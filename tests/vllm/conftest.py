"""The vLLM watcher (vllm_watch/) and node 04 over it; the tests that need a real vLLM use
tests/vllm_support.py.

Shared fixtures: tests/conftest.py; this room's own, here."""
