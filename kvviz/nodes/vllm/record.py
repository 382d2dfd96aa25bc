"""Record a real vLLM session for node 04 to play when no vLLM answers (`make vllm-recording`).

    python -m kvviz.nodes.vllm.record [assets/vllm-recording.json]

Starts vLLM's CPU build (in $KVVIZ_VLLM_VENV, default .venv-vllm; the launcher
tools/vllm_server.py) serving kvviz's model, watches it with the watcher's recorder
(vllm_watch/recorder.py), which keeps every KV-event message and /metrics scrape it reads, sends
node 03's four questions together and then two more, one after the other, and writes the
recording (vllm_watch/recording.py's format) with vLLM's answers, its version and the time.
Before writing, the recording is played back (vllm_watch/playback.py) and must give the live
watcher's own tree and metrics. About a minute on two cores.
"""

from __future__ import annotations

import concurrent.futures
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from kvviz.nodes.prompts import MORE_QUESTIONS
from kvviz.nodes.vllm.scenario import LESSON_QUESTIONS, MAX_NEW_TOKENS, prompt_for
from kvviz.nodes.vllm.shipped import PATH
from tools import vllm_server as server  # (the launcher: this command starts a vLLM)
from vllm_watch import client
from vllm_watch.defaults import BLOCK_SIZE, MODEL_NAME, NUM_BLOCKS, VENV
from vllm_watch.playback import play
from vllm_watch.recorder import Recorder
from vllm_watch.recording import FORMAT, RecordingError, parse
from vllm_watch.snapshot import Endpoints, VllmSnapshot

PAUSE_S = 2.0  # seconds between the parts of the session, so the charts show each one


def vllm_version() -> str:
    return server.version()


def session(srv: server.VllmServer, questions: list[list[str]] | None = None) -> tuple[dict, VllmSnapshot]:
    """Record `questions` (groups sent together, one group after the other; default: node 03's
    four, then two more alone) against a running server. Returns (the recording's JSON, the live
    watcher's last snapshot)."""
    groups = questions or [list(LESSON_QUESTIONS), [MORE_QUESTIONS[0]], [MORE_QUESTIONS[1]]]
    rec = Recorder(Endpoints(srv.url, srv.events, srv.replay)).start()
    exchanges = []
    try:
        rec.wait_for(lambda s: s.status == "connected", timeout=30)
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            for g, group in enumerate(groups):
                time.sleep(PAUSE_S)
                futures = [pool.submit(client.complete, srv.url, MODEL_NAME, prompt_for(q), MAX_NEW_TOKENS)
                           for q in group]
                for q, f in zip(group, futures, strict=True):
                    c = f.result()
                    exchanges.append({"question": q, "group": g, "token_ids": list(c.token_ids),
                                      "text": c.text, "cached_tokens": c.cached_tokens})
        time.sleep(PAUSE_S)
        last = rec.wait_for(lambda s: s.metrics is not None and s.metrics.running == 0
                            and s.metrics.waiting == 0)
        time.sleep(1.5)  # (one more scrape, and any last event batch)
        last = rec.latest()
    finally:
        rec.stop()
    data = {"format": FORMAT, "vllm_version": vllm_version(),
            "recorded": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "model": last.model,
            "block_size": BLOCK_SIZE, "num_blocks": NUM_BLOCKS, "max_new_tokens": MAX_NEW_TOKENS,
            "exchanges": exchanges, "items": rec.items}
    return data, last


def check(data: dict, live: VllmSnapshot) -> None:
    """The recording, played, must end where the live watcher did; RecordingError if not."""
    played = play(parse(data)).last
    if played.tree != live.tree or played.metrics != live.metrics or played.last_seq != live.last_seq:
        raise RecordingError("the recording, played back, does not give the live watcher's tree and metrics")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else PATH
    print(f"Starting vLLM from {VENV} (about half a minute)…", flush=True)
    with server.VllmServer() as srv:
        data, live = session(srv)
    check(data, live)
    out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"Recorded vLLM {data['vllm_version']}: {len(data['items'])} messages and scrapes, "
          f"{len(live.tree.blocks)} cached blocks at the end, {out.stat().st_size // 1024} KiB in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
