"""The teacher's class under `make class` (issue 31's goals; docs/benchmarks.md, "The teacher's
class"): the roster, the class's commands, what waiting students cost the server, the class's tree.

    python -m benchmarks.classroom.teacher [--students 120] [--arrive-s 20] [--backends 2]
                                           [--probes 2] [--questions 40] [--json PATH]
                                           [--hall postgresql://...]

STUDENTS plain clients, each from its own loopback address, act as a played page's class channel
does (kvviz/export/classroom.js: a first report, then the class state held until it changes) while
a Chromium teacher page on /teacher reads its roster. Measured: 1. the time until the roster counts
each arrival; 2. the backends' CPU over STEADY_S with nobody there, then with everyone waiting;
3. Pause, Resume and Follow me sent through nginx: the time until each student has the new state,
and until "Eyes on the teacher" covers (and leaves) PROBES Chromium pages on `/`; 4. QUESTIONS live
questions over a minute: from each answer until the teacher page's QUESTIONS ASKED counts it.
`--hall URL`: two machines' backends (127.0.0.1, 127.0.0.2) on the PostgreSQL store at URL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from benchmarks.classroom.report import summary
from benchmarks.classroom.server import cpu_seconds, wait_ready
from benchmarks.common import write_json
from tools.browser import Server
from tools.loopback_class import ClassServer, http_get, http_request, read_state, source_address

STEADY_S = 20.0
PASSPHRASE = f"bench {secrets.token_hex(6)}"
NODES = ("fragmentation", "paging", "radix")


class Student:
    """A played page's class channel: its first report, then the class state, held."""

    def __init__(self, i: int, where: tuple[str, int]):
        self.i, self.where, self.src = i, where, source_address(i)
        self.id = secrets.token_hex(16)
        self.states: list[tuple[float, dict]] = []  # (when it came, the state)
        self.errors: list[str] = []

    async def run(self) -> None:
        report = {"student_id": self.id, "node": NODES[self.i % 3], "predicted": [],
                  "name": f"Student {self.i}"}
        status, _h, _ = await http_request(*self.where, "POST", "/lesson-report", self.src,
                                           json.dumps(report).encode(), {"Content-Type": "application/json"})
        self.reported = time.perf_counter()
        if status != 200:
            self.errors.append(f"report {status}")
        tag = ""
        while True:  # (until the benchmark cancels it)
            try:
                since = f"?since={tag}" if tag else ""
                status, _h, body = await http_get(*self.where, f"/lesson-class{since}", self.src, timeout=40)
                if status == 200:
                    state = json.loads(body)
                    if state["tag"] != tag:
                        self.states.append((time.perf_counter(), state))
                    tag = state["tag"]
                else:
                    self.errors.append(f"class {status}")
                    await asyncio.sleep(1)
            except (OSError, TimeoutError, ValueError) as e:
                self.errors.append(type(e).__name__)
                await asyncio.sleep(1)

    def reached(self, after: float, test) -> float | None:
        for t, state in self.states:
            if t >= after and test(state):
                return t - after
        return None


class Room:
    """Where the class meets: `make class`'s server (nginx in front of its backends) or, with
    `hall`, two machines' backends on 127.0.0.1 and 127.0.0.2 sharing one PostgreSQL store."""

    def __init__(self, a):
        self.a = a

    def __enter__(self) -> Room:
        a, self.stack = self.a, contextlib.ExitStack()
        os.environ["KVVIZ_TEACHER_KEY"] = PASSPHRASE
        if a.hall:
            env = {"KVVIZ_DB": a.hall, "KVVIZ_TEACHER_KEY": PASSPHRASE}
            self.servers = [self.stack.enter_context(Server(("app.py", "teacher.py"), env=env, address=h))
                            for h in ("127.0.0.1", "127.0.0.2")]
            for server in self.servers:
                server.wait_for_recordings()
            self.entries = [(s.address, urllib.parse.urlsplit(s.base).port) for s in self.servers]
            self.teacher = self.entries[0]
            self.pids = [s.proc.pid for s in self.servers]
            self.probe_base = self.servers[1].base
        else:
            os.environ["KVVIZ_DB"] = os.path.join(tempfile.mkdtemp(prefix="kvviz-teacher-bench-"), "class.db")
            self.stack.enter_context(ClassServer(a.port, backends=a.backends, base_port=a.port + 1))
            base = f"http://127.0.0.1:{a.port}/"
            wait_ready(a.port, time.perf_counter())  # (the recording, then each backend's engine)
            backends = read_state(a.port)["backends"]
            self.entries = [("127.0.0.1", a.port)]  # (nginx)
            self.teacher = ("127.0.0.1", backends[0]["port"])
            self.pids = [b["pid"] for b in backends]
            self.probe_base = base
        return self

    def __exit__(self, *exc) -> None:
        self.stack.__exit__(*exc)

    def cpu(self) -> float:
        return sum(cpu_seconds(pid) or 0.0 for pid in self.pids)


def command(where: tuple[str, int], what: dict) -> float:
    """Send a teacher's command (through nginx, or to the hall's first machine); when it answered."""
    host, port = where
    req = urllib.request.Request(f"http://{host}:{port}/lesson-class", data=json.dumps(what).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {PASSPHRASE}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
    return time.perf_counter()


def count_reached(figure, reached: dict[int, float]) -> None:
    """Read a count the teacher page shows; note when it first reached each number up to it."""
    try:
        n = int(figure.text_content(timeout=2000) or 0)
    except Exception:  # noqa: BLE001 (not drawn yet, or drawn again meanwhile)
        n = 0
    now = time.perf_counter()
    for k in range(1, n + 1):
        reached.setdefault(k, now)


def run(a) -> dict:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    from tools.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: PLC0415

    out: dict = {"students": a.students, "backends": 2 if a.hall else a.backends,
                 "room": "lecture hall: 127.0.0.1 and 127.0.0.2, PostgreSQL" if a.hall else "make class",
                 "load_before": os.getloadavg()[0]}
    with Room(a) as room, sync_playwright() as p:
        teacher_host, teacher_port = room.teacher
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        teacher = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
        teacher.set_default_timeout(120_000)
        teacher.goto(f"http://{teacher_host}:{teacher_port}/teacher")
        teacher.get_by_label("Teacher passphrase").fill(PASSPHRASE)
        teacher.get_by_role("button", name="Open the class").click()
        teacher.locator(".kv-r").first.wait_for()
        probes = []
        for _ in range(a.probes):
            page = browser.new_context().new_page()
            page.set_default_timeout(120_000)
            page.goto(room.probe_base)
            page.wait_for_function("document.documentElement.dataset.kvReadyRadix === '1'")
            probes.append(page)

        cpu0, t0 = room.cpu(), time.perf_counter()
        time.sleep(STEADY_S)
        idle = (room.cpu() - cpu0) / (time.perf_counter() - t0)

        # the class arrives, in an event loop of its own
        loop = asyncio.new_event_loop()
        students = [Student(i, room.entries[i % len(room.entries)]) for i in range(a.students)]
        arrive = [a.arrive_s * i / max(1, a.students) for i in range(a.students)]
        t_class = time.perf_counter()

        async def crowd():
            async def one(s, delay):
                await asyncio.sleep(delay)
                await s.run()
            await asyncio.gather(*(one(s, d) for s, d in zip(students, arrive, strict=True)),
                                 return_exceptions=True)
        def in_thread():
            with contextlib.suppress(asyncio.CancelledError):  # (the benchmark is over)
                loop.run_until_complete(crowd())
        threading.Thread(target=in_thread, daemon=True).start()
        counted = {}  # roster count -> when the teacher page first showed it
        total = teacher.locator(".kv-r-total b").first
        everyone = a.students + a.probes  # (the Chromium pages are students on the roster too)
        while time.perf_counter() - t_class < a.arrive_s + 15 and len(counted) < everyone:
            count_reached(total, counted)
            time.sleep(0.1)
        arrivals = sorted(s.reported for s in students if hasattr(s, "reported"))
        out["roster_s"] = summary([counted[a.probes + k + 1] - t for k, t in enumerate(arrivals)
                                   if a.probes + k + 1 in counted])
        out["roster_missing"] = everyone - len(counted)

        time.sleep(3)
        cpu0, t0 = room.cpu(), time.perf_counter()
        time.sleep(STEADY_S)
        busy = (room.cpu() - cpu0) / (time.perf_counter() - t0)
        out["steady_cpu_pct_of_core"] = {"idle": round(100 * idle, 2), "class": round(100 * busy, 2),
                                         "class_cost": round(100 * (busy - idle), 2)}

        # the teacher's commands
        reach, probe_s = [], []
        tests = [("pause", {"command": "pause"}, lambda s: s["paused"]),
                 ("resume", {"command": "resume"}, lambda s: not s["paused"]),
                 ("follow", {"command": "follow", "node": "radix", "query": "?sharing=0"},
                  lambda s: s["follow"]["node"] == "radix")]
        for name, what, test in tests:
            at = command(room.entries[0] if not a.hall else room.teacher, what)
            for page in probes if name != "follow" else ():
                page.get_by_role("alertdialog").wait_for(state="visible" if name == "pause" else "detached")
                probe_s.append(time.perf_counter() - at)
            time.sleep(3)
            reach += [s.reached(at, test) for s in students]
        out["command_reach_s"] = summary([r for r in reach if r is not None])
        out["command_missed"] = sum(r is None for r in reach)
        out["probe_pause_resume_s"] = summary(probe_s)

        # the class's tree: questions to the teacher page's backend, from their own addresses
        asked = teacher.locator('.kv-class-cards [data-label="QUESTIONS ASKED"] dd').first
        answered: list[tuple[float, int]] = []

        async def questions():
            for k in range(a.questions):
                q = urllib.parse.urlencode([("node", "radix"), ("sharing", "1"),
                                            ("op",
                                             f"ask:Question {k} of the bench, {secrets.token_hex(3)}?")])
                status, _h, _ = await http_get(*room.teacher, f"/lesson-live?{q}", source_address(1000 + k),
                                               timeout=120)
                answered.append((time.perf_counter(), status))
                await asyncio.sleep(max(0.0, 60.0 / a.questions))
        qloop = asyncio.new_event_loop()
        qt = threading.Thread(target=lambda: qloop.run_until_complete(questions()), daemon=True)
        qt.start()
        seen: dict[int, float] = {}
        while qt.is_alive() or len(seen) < sum(1 for _t, s in answered if s == 200):
            count_reached(asked, seen)
            if not qt.is_alive() and time.perf_counter() - answered[-1][0] > 15:
                break
            time.sleep(0.1)
        ok = [t for t, s in answered if s == 200]
        out["questions"] = {"sent": a.questions, "answered": len(ok),
                            "refused": [s for _t, s in answered if s != 200]}
        out["tree_after_answer_s"] = summary([seen[k + 1] - t for k, t in enumerate(ok) if k + 1 in seen])
        loop.call_soon_threadsafe(lambda: [t.cancel() for t in asyncio.all_tasks(loop)])
        out["student_errors"] = sorted({e for s in students for e in s.errors})[:10]
        browser.close()
    out["load_after"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=120)
    ap.add_argument("--arrive-s", type=float, default=20.0)
    ap.add_argument("--backends", type=int, default=2)
    ap.add_argument("--probes", type=int, default=2)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--port", type=int, default=5490)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--hall", default=None,
                    help="a PostgreSQL URL: the lecture hall, on 127.0.0.1 and 127.0.0.2")
    a = ap.parse_args(argv)
    out = run(a)
    print(json.dumps(out, indent=2))
    if a.json:
        write_json(a.json, out)
    return out


if __name__ == "__main__":
    main()
