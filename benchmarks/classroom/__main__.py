"""A class on the served lesson as students open it: the browser plays the recordings, the server
runs only what is new (docs/benchmarks.md, "A class of 120 on the recorded lesson").

    python -m benchmarks.classroom [--students 120] [--arrive-s 20] [--typers 12] [--enter-within S]
                                   [--backends 2] [--probes 2] [--fresh] [--clients-nice N] [--handin-s 10]
                                   [--flood RATE [--flood-s 10]] [--probe-pages] [--port 5390] [--json PATH]
    python -m benchmarks.classroom --students 0 --typers 0 --probes 1     # one student alone

It starts `make class`'s server (deploy/class_server.py: nginx in front of BACKENDS backends) on
loopback at PORT, or uses the one running there (its state file says so), and measures: 1. the
seconds until the recorded lesson is ready (`--fresh`: in an empty cache) and each backend has
readied its engine; 2. STUDENTS, each from its own loopback address, spread over ARRIVE_S, open `/`
as a first visit does (every script and stylesheet, nothing cached): the ready page, busy pages
(503); 3. TYPERS of them ask a question no recording holds (each its own; `--enter-within S`: all
of them within S seconds, at the teacher's word), timed to the whole answer (and its
`Server-Timing`: wait, compute); 4. PROBES Chromium pages act meanwhile (probes.py); 5. every
student hands in within HANDIN_S, then the store is read (0 lost, 0 doubled); 6. the backends' CPU
while the class arrives, their memory before and after. `--flood RATE`: one more address sends
RATE live questions a second for FLOOD_S, its outcomes counted by kind. `--probe-pages`: one more
address loads a backend's status and live page meanwhile (what a question must not hold up).
`--clients-nice N`: the crowd and the Chromiums (their sessions' autogroups too: Linux shares the
CPU between sessions first) at niceness N, standing for the students' own devices; the typers
apart, at normal priority.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

from benchmarks.classroom import clients, report
from benchmarks.classroom.probes import chromium_probe
from benchmarks.classroom.server import ServerMeter, renice_autogroup, wait_ready
from tools.loopback_class import ClassServer, read_state, running_state


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.classroom", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=120)
    ap.add_argument("--arrive-s", type=float, default=20.0)
    ap.add_argument("--typers", type=int, default=12)
    ap.add_argument("--enter-within", type=float, default=None, metavar="S",
                    help="the typers press Enter together, within S s once the class is in (default: "
                         "each reads 1-5 s after arriving, then types)")
    ap.add_argument("--backends", type=int, default=2)
    ap.add_argument("--probes", type=int, default=2, help="Chromium pages that act meanwhile (0: none)")
    ap.add_argument("--port", type=int, default=5390, help="nginx's port (the backends take the next ones)")
    ap.add_argument("--fresh", action="store_true", help="record in an empty cache (a first start)")
    ap.add_argument("--clients-nice", type=int, default=0, help="the students' niceness (default 0)")
    ap.add_argument("--handin-s", type=float, default=10.0, help="every student hands in within this")
    ap.add_argument("--flood", type=float, default=0.0, help="live questions a second from one address")
    ap.add_argument("--flood-s", type=float, default=10.0, help="for this many seconds, from the start")
    ap.add_argument("--probe-pages", action="store_true", help="one more address loads a backend's pages")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for deploy/class_server.py (repeatable)")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH",
                    help="write the results here (default benchmarks/results/classroom-<UTC time>.json)")
    a = ap.parse_args(argv)
    if a.students < 0 or a.typers < 0 or a.arrive_s < 0 or not 0 <= a.probes <= 8:
        ap.error("counts and times must not be negative; --probes at most 8")
    return a


def in_thread(nice: int, target, *args) -> threading.Thread:
    """`target(*args)` in a thread of its own at niceness `nice` (its children inherit it)."""
    def run():
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        target(*args)

    t = threading.Thread(target=run)
    t.start()
    return t


def the_class(a: argparse.Namespace, after: int, result: dict) -> tuple[list, list, list]:
    """The class comes in (2 s from now): the crowd, the typers (apart with --clients-nice), the
    Chromium probes and the flood, all at once; (visits, live answers, probes)."""
    start_at = time.time() + 2.0
    args = ("127.0.0.1", a.port, a.students, a.arrive_s, a.typers, after, start_at, a.enter_within)
    typers_out = None
    if a.clients_nice:
        ctx = multiprocessing.get_context("fork")  # (before any thread of ours starts)
        typers_out = ctx.Queue()
        typers = ctx.Process(target=clients.typers_apart, args=(typers_out, *args))
        typers.start()
        result["autogroups_reniced"] = renice_autogroup(os.getpid(), a.clients_nice)
    base = f"http://127.0.0.1:{a.port}"
    probes: list[dict] = [{} for _ in range(a.probes)]
    threads = [in_thread(a.clients_nice, chromium_probe, base, out, 24, a.clients_nice) for out in probes]
    crowd_out: list = []
    part = "others" if typers_out else "all"
    threads.append(in_thread(a.clients_nice,
                             lambda: crowd_out.append(asyncio.run(clients.crowd(*args, part=part)))))
    if a.flood:
        threads.append(in_thread(a.clients_nice, lambda: result.update(flood=asyncio.run(
            clients.flood("127.0.0.1", a.port, a.flood, a.flood_s, after, start_at)))))
    done = threading.Event()
    pages = [in_thread(0, lambda: result.update(pages=asyncio.run(
        clients.backend_pages("127.0.0.1", a.port, start_at, done))))] if a.probe_pages else []
    for t in threads:
        t.join()
    done.set()
    for t in pages:
        t.join()
    visits, lives = crowd_out[0]
    if typers_out:
        more_visits, lives = typers_out.get(timeout=600)
        visits += more_visits
        typers.join()
    return visits, lives, probes


def run(a: argparse.Namespace) -> dict:
    env_before = dict(os.environ)
    found = running_state(a.port)
    if a.fresh:
        os.environ["KVVIZ_CACHE"] = tempfile.mkdtemp(prefix="kvviz-cache-")
    if found:
        os.environ["KVVIZ_DB"] = found["db"]
    os.environ.setdefault("KVVIZ_DB", os.path.join(tempfile.mkdtemp(prefix="kvviz-class-"), "class.db"))
    load = os.getloadavg()
    t_start = time.perf_counter()
    result: dict = {"date": datetime.now().isoformat(timespec="seconds"),
                    "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()}}
    try:
        server = ClassServer(a.port, backends=a.backends, base_port=a.port + 1, extra=a.server_arg)
        with contextlib.nullcontext() if found else server:
            result["server_started_here"] = not found
            result["server_up_s"] = round(time.perf_counter() - t_start, 1)
            ready = wait_ready(a.port, t_start)
            after = ready.pop("after")
            result.update(ready)
            meter = ServerMeter(a.port)
            meter.sample("before")
            visits, lives, probes = the_class(a, after, result)
            meter.sample("arrived")
            run_dir = (read_state(a.port) or {}).get("run_dir")  # (nginx's log, read while it is there)
            result["nginx_during_actions"] = report.nginx_during_actions(
                Path(run_dir) / "access.log" if run_dir else None, probes)
            handins = asyncio.run(clients.class_hands_in("127.0.0.1", a.port, a.students, a.handin_s))
            meter.sample("after")
            result["handin"] = {**report.summary([h["s"] for h in handins if h["ok"]]),
                                "failed": sum(1 for h in handins if not h["ok"]),
                                **clients.stored_handins(a.students)}
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    result["arrival"] = report.arrival(visits)
    result["live_question"] = report.live(lives)
    result["chromium"] = report.chromium(probes)
    result["server"] = {"backends": [b.name for b in meter.backends],
                        "cpu": meter.cpu_between("before", "arrived"),
                        "memory_mb": {k: meter.memory(k) for k in ("before", "after")}}
    result["machine"] = report.machine(load)
    return result


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    print(f"classroom: {a.students} students ({a.typers} typing) over {a.arrive_s:g} s, {a.probes} Chromium "
          f"probes, {a.backends} backends on port {a.port}", file=sys.stderr, flush=True)
    result = run(a)
    print(report.table(result))
    print(f"results: {report.write(result, a.json)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
