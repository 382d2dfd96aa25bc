"""The class server as benchmarks.classroom sees it: started (`--start`, the script `make class`
runs), found (its state file, else the processes listening on loopback), and measured from /proc
(CPU seconds, RSS and PSS of each backend) and from nginx's access log (which backend served each
GET and websocket)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLASS_SERVER = ROOT / "deploy" / "class_server.py"
START_TIMEOUT_S = 300
CLK_TCK = os.sysconf("SC_CLK_TCK")
ACCESS_RE = re.compile(r'^(\S+) \[[^\]]*\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+) (\S+) upstream=(\S+)')


def state_path(port: int) -> Path:
    sys.path.insert(0, str(CLASS_SERVER.parent))
    try:
        import class_server  # noqa: PLC0415 (deploy/ is not a package: the one place that knows the path)
    finally:
        sys.path.pop(0)
    return class_server.state_path(port)


def read_state(port: int) -> dict | None:
    with contextlib.suppress(FileNotFoundError, ValueError):
        return json.loads(state_path(port).read_text())
    return None


class StartedServer:
    """`python deploy/class_server.py` on loopback, stopped (with all its children) on exit."""

    def __init__(self, port: int, backends: int, base_port: int, extra: list[str] | None = None):
        self.port, self.backends, self.base_port, self.extra = port, backends, base_port, extra or []
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    def __enter__(self) -> StartedServer:
        import tempfile  # noqa: PLC0415

        cmd = [sys.executable, str(CLASS_SERVER), "--address", "127.0.0.1", "--port", str(self.port),
               "--backends", str(self.backends), "--base-port", str(self.base_port), *self.extra]
        log = tempfile.NamedTemporaryFile("w", prefix="kvviz-class-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.log_path = Path(log.name)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                state = read_state(self.port)
                if state and state.get("ready") and state.get("pid") == self.proc.pid:
                    return self
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the class server exited ({self.proc.returncode}):\n{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the class server was not ready after {START_TIMEOUT_S} s:\n{self.log_tail()}")
                time.sleep(0.5)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def log_tail(self, num_chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-num_chars:] if self.log_path else ""

    def __exit__(self, *_exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # as Ctrl-C: it stops nginx and the backends
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)


# -- /proc ----------------------------------------------------------------------------------------
def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def cpu_seconds(pid: int) -> float | None:
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (peak RSS) and Pss (RSS with shared pages split among their sharers), in kB."""
    out = {}
    status = _read(f"/proc/{pid}/status") or ""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    rollup = _read(f"/proc/{pid}/smaps_rollup") or ""
    for line in rollup.splitlines():
        if line.startswith("Pss:"):
            out["Pss"] = int(line.split()[1])
    return out


def listening_pids(ports: set[int]) -> dict[int, int]:
    """port -> pid of the process listening on it (IPv4 loopback or any), from /proc/net/tcp."""
    inodes: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in (_read(table) or "").splitlines()[1:]:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A":  # LISTEN
                port = int(parts[1].rsplit(":", 1)[1], 16)
                if port in ports:
                    inodes[parts[9]] = port
    found: dict[int, int] = {}
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or not inodes:
            continue
        with contextlib.suppress(OSError):
            for fd in (pid_dir / "fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:["):
                        port = inodes.get(link[8:-1])
                        if port is not None:
                            found.setdefault(port, int(pid_dir.name))
    return found


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, in clock ticks, from /proc/stat."""
    fields = [int(x) for x in (_read("/proc/stat") or "cpu 0 0 0 0").splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (children, their children, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            stat = _read(f"/proc/{d.name}/stat")
            if stat:
                ppid = int(stat[stat.rindex(")") + 2:].split()[1])
                children.setdefault(ppid, []).append(int(d.name))
    out, stack = [], [pid]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


@dataclass
class Backend:
    name: str  # "127.0.0.1:5100": as nginx's X-Kvviz-Backend names it
    pid: int


def find_backends(port: int) -> tuple[list[Backend], dict | None]:
    """The backends of the class server on `port`: from its state file, else every `panel serve`
    listening on a loopback port (a server not started by deploy/class_server.py)."""
    state = read_state(port)
    if state and state.get("backends"):
        return [Backend(f"127.0.0.1:{b['port']}", b["pid"]) for b in state["backends"] if b.get("pid")], state
    out = []
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        cmd = (_read(f"/proc/{pid_dir.name}/cmdline") or "").split("\0")
        if "panel" in " ".join(cmd) and "serve" in cmd and "--port" in cmd:
            with contextlib.suppress(ValueError, IndexError):
                p = int(cmd[cmd.index("--port") + 1])
                if p != port:
                    out.append(Backend(f"127.0.0.1:{p}", int(pid_dir.name)))
    return out, None


class ServerMeter:
    """CPU seconds and memory of the backends, sampled when asked; re-reads the state file each
    time, so a restarted backend is followed (its CPU counts from its restart)."""

    def __init__(self, port: int):
        self.port = port
        self.backends, self.state = find_backends(port)
        self.samples: dict[str, dict] = {}

    def refresh(self) -> None:
        backends, state = find_backends(self.port)
        if backends:
            self.backends, self.state = backends, state

    def sample(self, label: str) -> dict:
        self.refresh()
        busy, total = machine_jiffies()
        out = {"t": time.perf_counter(), "backends": {}, "machine_busy_s": busy / CLK_TCK,
               "machine_total_s": total / CLK_TCK,
               "client_s": cpu_seconds(os.getpid()) or 0.0}  # this process: the students
        for b in self.backends:
            cpu = cpu_seconds(b.pid)
            if cpu is None:
                continue
            out["backends"][b.name] = {"pid": b.pid, "cpu_s": cpu, **memory_kb(b.pid)}
        self.samples[label] = out
        return out

    def cpu_between(self, a: str, b: str) -> dict:
        """Per backend and in total: CPU seconds between two samples and the share of one core."""
        sa, sb = self.samples[a], self.samples[b]
        wall = max(sb["t"] - sa["t"], 1e-9)
        per = {}
        for name, end in sb["backends"].items():
            start = sa["backends"].get(name)
            if start and start["pid"] == end["pid"]:
                per[name] = round(end["cpu_s"] - start["cpu_s"], 2)
        total = sum(per.values())
        machine = sb["machine_busy_s"] - sa["machine_busy_s"]
        client = sb["client_s"] - sa["client_s"]
        return {"wall_s": round(wall, 2), "cpu_s": per, "cpu_s_total": round(total, 2),
                "cores_busy": round(total / wall, 2),
                # the whole machine, the students (this process), and the rest: Chromium probes,
                # nginx, and whatever else runs on a shared machine
                "machine_cores_busy": round(machine / wall, 2), "students_cores_busy": round(client / wall, 2),
                "other_cores_busy": round(max(0.0, machine - total - client) / wall, 2),
                "machine_cores": os.cpu_count()}

    def memory(self, label: str) -> dict:
        s = self.samples[label]["backends"]
        mb = lambda key: round(sum(v.get(key, 0) for v in s.values()) / 1024, 1)  # noqa: E731
        return {"rss_mb": mb("VmRSS"), "pss_mb": mb("Pss"), "peak_rss_mb": mb("VmHWM"),
                "per_backend_rss_mb": {k: round(v.get("VmRSS", 0) / 1024, 1) for k, v in s.items()}}


class AccessLog:
    """nginx's access log of the class server, from where it stood when this was made."""

    def __init__(self, path: str | None):
        self.path = Path(path) if path else None
        self.offset = self.path.stat().st_size if self.path and self.path.exists() else 0

    def counts(self) -> dict:
        """Per backend: GETs of /app and websockets of /app/ws since the start (a websocket is
        logged when it closes), and per client address the backends its GETs and websockets went to."""
        if not self.path or not self.path.exists():
            return {}
        with self.path.open(errors="replace") as f:
            f.seek(self.offset)
            lines = f.read().splitlines()
        per_backend: dict[str, dict[str, int]] = {}
        per_client: dict[str, dict[str, set]] = {}
        for line in lines:
            m = ACCESS_RE.match(line)
            if not m:
                continue
            client, _method, path, status, _size, _t, upstream = m.groups()
            route = path.split("?")[0]
            kind = "ws" if route == "/app/ws" else "get" if route in ("/app", "/app/") else None
            if kind is None:
                continue
            upstream = upstream.split(",")[-1].strip()  # after a retry: the one that answered
            per_backend.setdefault(upstream, {"get": 0, "ws": 0})[kind] += 1
            c = per_client.setdefault(client, {"get": set(), "ws": set()})
            c[kind].add(upstream)
            if status.startswith("5"):
                per_backend[upstream].setdefault("errors", 0)
                per_backend[upstream]["errors"] += 1
        split = sorted(c for c, v in per_client.items() if v["get"] and v["ws"] and v["get"] != v["ws"])
        return {"per_backend": per_backend, "clients": len(per_client), "clients_split": split}


LOG_PATTERNS = {  # what a backend's log says about the run
    "websockets_opened": "WebSocket connection opened",
    "unretrieved_task_errors": "Task exception was never retrieved",
    "websocket_closed_errors": "WebSocketClosedError",
    "tracebacks": "Traceback (most recent call last)",
    "errors": " ERROR ",
}


class BackendLogs:
    """The backends' logs (`panel serve` output) from where they stood when this was made."""

    def __init__(self, state: dict | None):
        self.paths = {f"127.0.0.1:{b['port']}": Path(b["log"]) for b in (state or {}).get("backends", []) if b.get("log")}
        self.offsets = {k: p.stat().st_size if p.exists() else 0 for k, p in self.paths.items()}

    def counts(self) -> dict:
        """Per backend, how many lines since the start match each of LOG_PATTERNS; and a few of
        the error lines."""
        out: dict = {"per_backend": {}, "examples": []}
        for name, path in self.paths.items():
            if not path.exists():
                continue
            with path.open(errors="replace") as f:
                f.seek(self.offsets.get(name, 0))
                text = f.read()
            out["per_backend"][name] = {k: text.count(v) for k, v in LOG_PATTERNS.items()}
            for line in text.splitlines():
                if any(k in line for k in ("ERROR", "xception", "Error")) and len(out["examples"]) < 8:
                    out["examples"].append(line[:300])
        totals = {k: sum(v[k] for v in out["per_backend"].values()) for k in LOG_PATTERNS}
        out["totals"] = totals
        return out
