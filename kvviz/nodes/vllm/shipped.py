"""The vLLM session node 04 ships (assets/vllm-recording.json, `make vllm-recording`: record.py),
played through the watcher's own code (vllm_watch/playback.py) once per process and shared by
every session: what node 04 shows when no vLLM answers, and what the static export records.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from vllm_watch.playback import Played, play
from vllm_watch.recording import RecordingError, load

ROOT = Path(__file__).resolve().parents[3]
PATH = ROOT / "assets" / "vllm-recording.json"

_LOCK = threading.Lock()


@functools.cache
def _shipped() -> Played | RecordingError:
    try:
        return play(load(PATH))
    except RecordingError as e:
        return e


def shipped() -> Played | RecordingError:
    """The recording in assets/, played once per process (or why it cannot be)."""
    with _LOCK:
        return _shipped()
