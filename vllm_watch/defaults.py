"""The vLLM kvviz serves, and where the watcher looks for it by default: one home for what the
launcher (tools/vllm_server.py), the watcher (`snapshot.Endpoints`) and node 04 must agree on.
Standard library only: the launcher imports it with vLLM's own Python.

`make vllm` serves kvviz's model as MODEL_NAME, with blocks of BLOCK_SIZE tokens (vLLM's CPU
attention needs a multiple of 32) in a pool of NUM_BLOCKS (small, so a class sees eviction and
preemption), on 127.0.0.1:DEFAULT_PORT, its KV events on `ipc://` sockets in its environment.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("KVVIZ_VLLM_VENV", ROOT / ".venv-vllm"))  # vLLM's own environment
MODEL_NAME = "kvviz"
BLOCK_SIZE = 32
NUM_BLOCKS = 64
DEFAULT_PORT = 8000
DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
DEFAULT_EVENTS = f"ipc://{VENV}/kv-events"
DEFAULT_REPLAY = f"ipc://{VENV}/kv-replay"
