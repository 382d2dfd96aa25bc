"""Server control and measurement: the class server (started by tools/loopback_class.py) made
ready as before a class, and measured from /proc: CPU seconds, RSS and PSS of each backend (from
the server's state file), the whole machine's busy time, the students' (this process)."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tools.loopback_class import read_state

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _status(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())


def wait_ready(port: int, t_start: float) -> dict:
    """As a teacher before the class: until the recorded lesson is there and each backend has
    readied its engine for what no recording holds; the seconds each took from `t_start`, and
    `after`: the last step of node 03's recorded branch (sharing on), after which a typed
    question comes (the page sends it as `from`)."""
    out: dict = {}
    while not _status(f"http://127.0.0.1:{port}/lesson-status")["ready"]:
        time.sleep(0.5)
    out["recordings_ready_s"] = round(time.perf_counter() - t_start, 1)
    for b in (read_state(port) or {}).get("backends", []):
        deadline = time.monotonic() + 300
        backend = f"http://127.0.0.1:{b['port']}/lesson-status"
        while time.monotonic() < deadline and not _status(backend).get("warm"):
            time.sleep(0.5)
    out["backends_warm_s"] = round(time.perf_counter() - t_start, 1)
    out["after"] = _status(f"http://127.0.0.1:{port}/lesson-live?node=radix&sharing=1")["steps"][-1]
    return out


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
    for line in (_read(f"/proc/{pid}/status") or "").splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    for line in (_read(f"/proc/{pid}/smaps_rollup") or "").splitlines():
        if line.startswith("Pss:"):
            out["Pss"] = int(line.split()[1])
    return out


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, in clock ticks, from /proc/stat."""
    fields = [int(x) for x in (_read("/proc/stat") or "cpu 0 0 0 0").splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of every process under `pid`."""
    children: dict[int, list[tuple[int, str]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        text = _read(str(stat))
        if text:
            ppid = int(text[text.rindex(")") + 2:].split()[1])
            name = text[text.index("(") + 1:text.rindex(")")]
            children.setdefault(ppid, []).append((int(stat.parent.name), name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def renice_autogroup(pid: int, nice: int) -> bool:
    """Give `pid`'s *autogroup* the niceness `nice`. Linux (with sched_autogroup_enabled) first
    shares the CPU between sessions' autogroups, then between the processes of one: a process's
    own niceness counts only against its own session. False where that cannot be set."""
    try:
        Path(f"/proc/{pid}/autogroup").write_text(f"{nice}\n")
    except OSError:
        return False
    return True


@dataclass
class Backend:
    name: str  # "127.0.0.1:5100": as nginx's X-Kvviz-Backend names it
    pid: int


def find_backends(port: int) -> list[Backend]:
    """The backends of the class server on `port`, from its state file."""
    state = read_state(port) or {}
    return [Backend(f"127.0.0.1:{b['port']}", b["pid"]) for b in state.get("backends", []) if b.get("pid")]


class ServerMeter:
    """CPU seconds and memory of the backends, sampled when asked; re-reads the state file each
    time, so a restarted backend is followed (its CPU counts from its restart)."""

    def __init__(self, port: int):
        self.port = port
        self.backends = find_backends(port)
        self.samples: dict[str, dict] = {}

    def sample(self, label: str) -> dict:
        self.backends = find_backends(self.port) or self.backends
        busy, _total = machine_jiffies()
        out = {"t": time.perf_counter(), "backends": {}, "machine_busy_s": busy / CLK_TCK,
               "client_s": cpu_seconds(os.getpid()) or 0.0}  # this process: the students
        for b in self.backends:
            cpu = cpu_seconds(b.pid)
            if cpu is not None:
                out["backends"][b.name] = {"pid": b.pid, "cpu_s": cpu, **memory_kb(b.pid)}
        self.samples[label] = out
        return out

    def cpu_between(self, a: str, b: str) -> dict:
        """Per backend and in total: CPU seconds between two samples and the cores busy; the
        whole machine's, the students' (this process) and the rest (nginx, other work)."""
        sa, sb = self.samples[a], self.samples[b]
        wall = max(sb["t"] - sa["t"], 1e-9)
        per = {name: round(end["cpu_s"] - sa["backends"][name]["cpu_s"], 2)
               for name, end in sb["backends"].items()
               if name in sa["backends"] and sa["backends"][name]["pid"] == end["pid"]}
        total, machine = sum(per.values()), sb["machine_busy_s"] - sa["machine_busy_s"]
        client = sb["client_s"] - sa["client_s"]
        return {"wall_s": round(wall, 2), "cpu_s": per, "cpu_s_total": round(total, 2),
                "cores_busy": round(total / wall, 2), "machine_cores_busy": round(machine / wall, 2),
                "students_cores_busy": round(client / wall, 2),
                "other_cores_busy": round(max(0.0, machine - total - client) / wall, 2),
                "machine_cores": os.cpu_count()}

    def memory(self, label: str) -> dict:
        s = self.samples[label]["backends"]
        mb = lambda key: round(sum(v.get(key, 0) for v in s.values()) / 1024, 1)  # noqa: E731
        return {"rss_mb": mb("VmRSS"), "pss_mb": mb("Pss"), "peak_rss_mb": mb("VmHWM"),
                "per_backend_rss_mb": {k: round(v.get("VmRSS", 0) / 1024, 1) for k, v in s.items()}}
