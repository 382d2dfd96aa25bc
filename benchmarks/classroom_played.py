"""A class on the served lesson as it is now: the browser plays the recordings, the server runs
only what is new (kvviz/serve/routes.py).

    python -m benchmarks.classroom_played [--students 120] [--arrive-s 20] [--typers 12]
                                          [--backends 2] [--probes 2] [--fresh] [--json PATH]
                                          [--flood RATE [--flood-s 10]]

It starts `make class`'s server (deploy/class_server.py: nginx in front of BACKENDS single-process
`panel serve` backends) on loopback and measures, on this machine:

1. recordings: seconds from the server's start until its recorded lesson is ready (`--fresh`: in
   an empty cache, as on a first start; else whatever this code's cache holds);
2. arrival: STUDENTS protocol students, each from its own loopback address (127.1.x.y), arriving
   spread over ARRIVE_S seconds, open the student's address `/` as a browser's first visit
   does (the redirect, the page, every script and stylesheet it links, nothing cached): ready
   page = all of it received; a 503 (busy) counts as a busy page;
3. live: TYPERS of them, meanwhile, ask their own question, which no recording holds: the page
   sends the node's link with it to the server (`/lesson-live?node=radix&sharing=1&op=ask:...`,
   as the player does, with `from`: the page keeps the steps before the question), whose engine
   runs it and answers with the branch to play: the time to the whole answer (each question
   different: none is answered from the server's kept answers); the server is first let ready
   its engine for these (a few seconds after the recording is there, as before a class);
4. in Chromium (PROBES pages, acting for real, during the arrival): each scripted action (Free
   R2, Reset, the slider, Step, Step back, Prefix sharing) from the click to the changed number
   on screen; every websocket the page opens; Play's pace (steps per second against the
   nominal 4); scrolling to node 03: the time until its strip is on screen; then a typed
   question: from Enter to the engine's answer drawn in the page; node 02's Add request among
   the actions; every request the page sends during its scripted actions (the goal: none);
   Explain it back (on the same page): a self-check from Enter to the engine's answer shown;
5. hand-in: every student hands in (predictions, a self-check, an answer: what the page's
   Hand in sends, `/lesson-handin`) within HANDIN_S seconds, each from its own address; then
   the class's store is read: stored = students (0 lost), one submission each (0 doubled),
   and the teacher's pulse counts every student's prediction.

`--flood RATE`: meanwhile one address that is no student's sends RATE distinct live questions a
second for FLOOD_S seconds from the class's start, as fast as it can (benchmarks/classroom_flood.py):
what it got back is counted by kind (answers, 429 "slow down", nginx's errors, failed connections);
the typers' answers are timed as in any run, to compare with the same run without the flood.

`--clients-nice N` stands the students' side for their own devices, which in a class are not the
server's cores: the crowd and the Chromiums run at niceness N, and so do their sessions'
*autogroups* (Linux shares the CPU between sessions first, so a process's niceness alone does
not count against the server's processes, each in its own session); the typers, whose questions
are timed, run apart at the normal priority. Each answer's `Server-Timing` says how long it
waited in the backend and how long its engine computed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
import statistics
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime

from benchmarks.classroom import http_get, page_resources, source_address
from benchmarks.classroom_flood import flood
from benchmarks.classroom_server import StartedServer, read_state
from benchmarks.common import descendants, percentile, renice_autogroup

QUESTIONS = ["What is a page?", "Why share a prefix?", "What is a block?", "When is a block freed?",
             "What does the cache hold?", "What is eviction?", "Why are pages small?", "What is a token?",
             "What is prefill?", "What is decode?", "Who owns a block?", "What is a radix tree?"]


def summary(values: list[float], scale: float = 1.0) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(statistics.median(values) * scale, 3),
            "p95": round(percentile(values, 95) * scale, 3), "max": round(max(values) * scale, 3)}


async def first_visit(host: str, port: int, source: str) -> dict:
    """`/`, its redirect, the page and everything it links, from `source`, nothing cached."""
    t0 = time.perf_counter()
    status, headers, _ = await http_get(host, port, "/", source)
    path = urllib.parse.urlsplit(headers.get("location", "/")).path if status == 302 else "/"
    if not path.startswith("/"):
        path = "/" + path
    status, headers, body = await http_get(host, port, path, source)
    if status != 200:
        return {"status": status, "busy": status == 503, "s": time.perf_counter() - t0}
    page = body.decode("utf-8", "replace")
    sem = asyncio.Semaphore(6)  # (a browser's connections per host)

    async def fetch(p):
        async with sem:
            st, h, _b = await http_get(host, port, p, source, decompress=False)  # (the browser's work)
            return st, int(h["wire_bytes"])

    got = await asyncio.gather(*(fetch(p) for p in page_resources(page, path)))
    bad = [p for p, (st, _n) in zip(page_resources(page, path), got, strict=True) if st != 200]
    return {"status": 200, "busy": False, "s": time.perf_counter() - t0, "path": path, "files": len(got) + 1, "bad": bad[:3],
            "failed": sum(1 for s, _n in got if s != 200), "bytes": int(headers["wire_bytes"]) + sum(n for _s, n in got)}


async def live_question(host: str, port: int, k: int, source: str, after: int) -> dict:
    q = urllib.parse.urlencode([("node", "radix"), ("sharing", "1"), ("op", f"ask:{QUESTIONS[k % len(QUESTIONS)]}"),
                                ("from", str(after))])
    t0 = time.perf_counter()
    try:
        status, _headers, body = await http_get(host, port, f"/lesson-live?{q}", source)
        answer = json.loads(body)
    except (TimeoutError, OSError, ValueError) as e:
        return {"error": f"{type(e).__name__}: {e}"[:200]}
    if status != 200 or not answer.get("ok") or not answer.get("rows"):
        return {"error": f"{status}: {answer.get('message', '')}"[:200]}
    timing = dict(re.findall(r"(\w+);dur=([\d.]+)", _headers.get("server-timing", "")))
    return {"ready_s": time.perf_counter() - t0, "states": len(answer["rows"]),
            "server_wait_s": float(timing.get("wait", "nan")) / 1000, "compute_s": float(timing.get("compute", "nan")) / 1000}


async def crowd(host: str, port: int, students: int, arrive_s: float, typers: int,
                after: int, start_at: float, part: str = "all") -> tuple[list, list]:
    """The class arriving from the wall-clock time `start_at`: every student (`part` "all"), only
    the TYPERS ("typers") or only the others ("others"), the same students and times in each."""
    rng = random.Random(7)
    arrivals = sorted(rng.uniform(0, arrive_s) for _ in range(students))
    typing = {i: k for k, i in enumerate(rng.sample(range(students), min(typers, students)))}
    reads = {i: rng.uniform(1, 5) for i in sorted(typing)}  # (reads, then types)
    mine = [i for i in range(students) if part == "all" or (i in typing) == (part == "typers")]

    async def one(i: int, at: float):
        await asyncio.sleep(max(0.0, start_at + at - time.time()))
        visit = await first_visit(host, port, source_address(i))
        live = None
        if i in typing:
            await asyncio.sleep(reads[i])
            live = await live_question(host, port, typing[i], source_address(i), after)
        return visit, live

    results = await asyncio.gather(*(one(i, arrivals[i]) for i in mine))
    return [v for v, _ in results], [lv for _, lv in results if lv is not None]


def _typers_apart(out, *args) -> None:
    """The typers, in a process of their own session at the normal priority (see --clients-nice)."""
    os.setsid()
    out.put(asyncio.run(crowd(*args, part="typers")))


def chromium_probe(base: str, out: dict, actions: int = 24, nice: int = 0) -> None:
    """One student in Chromium, acting for real (run in a thread while the crowd arrives)."""
    from playwright.sync_api import sync_playwright

    from tools.browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if nice:  # (Chromium runs in a session of its own: its niceness alone does not count)
            for pid, name in descendants(os.getpid()):
                if "chrom" in name:
                    renice_autogroup(pid, nice)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        sockets = []
        page.on("websocket", lambda ws: sockets.append(ws.url))
        t0 = time.perf_counter()
        page.goto(base + "/")
        for key in ("Fragmentation", "Paging", "Radix"):
            page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'", timeout=120_000)
        out["ready_s"] = time.perf_counter() - t0
        page.evaluate("""() => { for (const kind of ['pointerdown', 'keydown'])
            document.addEventListener(kind, () => { window.kvT0 = performance.now(); }, true); }""")
        clicks = []
        card = '.kv-metric[data-label="{}"] .kv-value'.format
        step = '.kv-step[data-node="fragmentation"]'
        sent: list[str] = []  # every request during the scripted actions
        # (but the class's: the state polled on a timer, the roster's reports when the node in view
        # changes; issue 31: "nothing beyond the reports"), counted apart
        classroom: list[str] = []
        page.on("request", lambda r: None if not out.get("acting") else
                (classroom if r.url.endswith(("/lesson-class", "/lesson-report")) else sent).append(r.url))
        out["class_requests_during_actions"] = classroom
        plan = [("button", "Add request", '.kv-step[data-node="paging"]'), ("button", "Free R2", card("LARGEST GAP")), ("button", "Reset", card("LARGEST GAP")),
                ("slider+", "Reserved length", card("RESERVED · EMPTY")),
                ("slider-", "Reserved length", card("RESERVED · EMPTY")),
                ("button", "◀ Step back", step), ("button", "Step ▶", step),
                ("check", "Prefix sharing", card("BLOCKS STORED")), ("uncheck", "Prefix sharing", card("BLOCKS STORED"))]
        for k in range(actions):
            kind, name, selector = plan[k % len(plan)]
            target_text = page.locator(selector).first
            before = target_text.inner_text()
            if kind == "button":
                target = page.get_by_role("button", name=name).first
            elif kind.startswith("slider"):
                target = page.get_by_role("slider", name=name).first
            else:
                target = page.get_by_role("checkbox", name=name).first
            target.scroll_into_view_if_needed()
            # (the card's HTML is written anew on a change: watch its shadow root, which stays).
            # In the page: when the text first differs, the next frame's start (its paint follows).
            handle = target_text.element_handle().evaluate_handle("el => el.getRootNode()")
            page.evaluate("""([root, selector, before]) => {
                window.kvShown = null;
                const seen = () => { const v = root.querySelector(selector); return v && v.textContent.trim() !== before.trim(); };
                const obs = new MutationObserver(() => {
                  if (seen()) { obs.disconnect(); requestAnimationFrame(() => { window.kvShown = performance.now(); }); }
                });
                obs.observe(root, {subtree: true, childList: true, characterData: true});
                window.kvStop = () => obs.disconnect();
              }""", [handle, selector, before])
            out["acting"] = True
            if kind == "slider+":
                target.press("ArrowUp")
            elif kind == "slider-":
                target.press("ArrowDown")
            else:
                target.click()
            try:  # (from the click's event in the page to the frame that shows the new number)
                ms = page.wait_for_function("() => window.kvShown !== null && Math.max(window.kvShown - window.kvT0, 0.01)",
                                            timeout=10_000)
                clicks.append(ms.json_value() / 1000)
                out.setdefault("by_action", {}).setdefault(f"{kind} {name}", []).append(round(ms.json_value(), 1))
            except Exception as e:  # noqa: BLE001 (an action that changed nothing: e.g. Step at the end)
                out["last_error"] = str(e)[:300]
                out.setdefault("unchanged", 0)
                out["unchanged"] = out.get("unchanged", 0) + 1
            page.wait_for_timeout(600)  # (the address bar is written at most twice a second: its requests too)
            out["acting"] = False
        out["clicks_s"] = clicks
        out["requests_during_actions"] = sent
        # Play's pace: node 01 from its start, until step 30 (nominal 250 ms a step)
        page.get_by_role("button", name="⟲ Rewind").first.click()
        t = time.perf_counter()
        page.get_by_role("button", name="▶ Play").first.click()
        page.wait_for_function(
            """() => { const f = (r) => { for (const el of r.querySelectorAll('*')) {
                 if (el.classList && el.classList.contains('kv-step') && el.dataset.node === 'fragmentation') return el;
                 if (el.shadowRoot) { const x = f(el.shadowRoot); if (x) return x; } } return null; };
               const el = f(document); return el && /step (3\\d)/.test(el.textContent); }""",
            polling="raf", timeout=60_000)
        out["play_steps_per_s"] = 30 / (time.perf_counter() - t)
        # Everyone scrolls to node 03 at the teacher's word: until its strip is on screen
        t = time.perf_counter()
        page.get_by_role("checkbox", name="Prefix sharing").first.scroll_into_view_if_needed()
        page.locator(".kv-metric[data-label='BLOCKS STORED']").first.wait_for(state="visible")
        out["scroll_s"] = time.perf_counter() - t
        # A question of the student's own: from Enter to the engine's answer drawn in the page
        box = page.get_by_role("textbox", name=re.compile("Your question")).first
        box.fill(f"Why is a page {len(sockets) + 16} tokens long?")
        t = time.perf_counter()
        box.press("Enter")
        page.locator(".kv-live-note", has_text="Live").first.wait_for(state="visible", timeout=60_000)
        out["typed_s"] = time.perf_counter() - t
        # Explain it back, on the same page: a self-check from Enter to the engine's answer shown
        check = page.locator(".kv-recorded-explain").get_by_placeholder("a whole number").first
        check.scroll_into_view_if_needed()
        check.fill("8")
        t = time.perf_counter()
        check.press("Enter")
        page.locator('.kv-feedback[data-check="gap_after_free"]', has_text="the engine says").wait_for(timeout=60_000)
        out["self_check_s"] = time.perf_counter() - t
        out["websockets"] = sockets
        browser.close()


HANDIN = {"predictions": [{"node": "radix", "question": "With sharing on, how many blocks?", "predicted": "18",
                           "outcome": "18", "right": True}],
          "checks": [{"key": "gap_after_free", "question": "What will LARGEST GAP read?", "typed": "8",
                      "outcome": "8", "feedback": "Right", "right": True}],
          "answer": "Paging borrows virtual memory's pages; sharing borrows shared pages.", "query": ""}


async def hand_in(host: str, port: int, i: int, source: str) -> dict:
    """Student i hands in what the page's Hand in sends (one POST, from its own address)."""
    body = json.dumps({**HANDIN, "student_id": f"{i:032x}", "name": f"student {i}"}).encode()
    t0 = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
        writer.write(f"POST /lesson-handin HTTP/1.0\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), 60)
        writer.close()
        status = int(raw.split(b" ", 2)[1])
        return {"status": status, "s": time.perf_counter() - t0, "ok": status == 200 and b'"ok": true' in raw}
    except (TimeoutError, OSError, ValueError, IndexError) as e:
        return {"status": 0, "s": time.perf_counter() - t0, "ok": False, "error": str(e)[:120]}


async def class_hands_in(host: str, port: int, students: int, within_s: float) -> list[dict]:
    async def one(i: int):
        await asyncio.sleep(within_s * i / max(students, 1))
        return await hand_in(host, port, i, source_address(i))
    return list(await asyncio.gather(*(one(i) for i in range(students))))


def stored_handins(students: int) -> dict:
    """What the class's store holds after the hand-ins: lost, doubled, the pulse's count."""
    from kvviz.handin.pulse import pulse
    from kvviz.handin.storage import Store

    rows = [h for h in Store(os.environ["KVVIZ_DB"]).handins() if h.name.startswith("student ")]
    return {"stored": len(rows), "lost": students - len({h.student_id for h in rows}),
            "doubled": sum(1 for h in rows if h.submissions != 1),
            "pulse_students": {f"{p.kind} {p.node}": p.students for p in pulse(rows)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.classroom_played", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=120)
    ap.add_argument("--arrive-s", type=float, default=20.0)
    ap.add_argument("--typers", type=int, default=12)
    ap.add_argument("--backends", type=int, default=2)
    ap.add_argument("--probes", type=int, default=2)
    ap.add_argument("--port", type=int, default=5390)
    ap.add_argument("--fresh", action="store_true", help="record in an empty cache (a first start)")
    ap.add_argument("--clients-nice", type=int, default=0,
                    help="run the students (the load generator and the Chromiums) at this niceness, their sessions' "
                         "autogroups too (Linux shares the CPU between sessions first): they stand "
                         "for the students' own devices, which in a class are not the server's cores (default 0)")
    ap.add_argument("--handin-s", type=float, default=10.0, help="every student hands in within this many seconds")
    ap.add_argument("--flood", type=float, default=0.0,
                    help="meanwhile one address (no student's) sends this many live questions a second "
                         "(benchmarks/classroom_flood.py; default 0: none)")
    ap.add_argument("--flood-s", type=float, default=10.0, help="for this many seconds, from the class's start")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    env_before = dict(os.environ)
    if a.fresh:
        os.environ["KVVIZ_CACHE"] = tempfile.mkdtemp(prefix="kvviz-cache-")
    os.environ.setdefault("KVVIZ_DB", os.path.join(tempfile.mkdtemp(prefix="kvviz-class-"), "class.db"))
    load = os.getloadavg()
    t_start = time.perf_counter()
    result: dict = {"date": datetime.now().isoformat(timespec="seconds"), "load_before": [round(x, 2) for x in load],
                    "cores": os.cpu_count(), "config": vars(a)}
    try:
        with StartedServer(a.port, backends=a.backends, base_port=a.port + 1):
            result["server_up_s"] = round(time.perf_counter() - t_start, 1)
            base = f"http://127.0.0.1:{a.port}"
            while True:
                with urllib.request.urlopen(base + "/lesson-status", timeout=30) as r:
                    if json.loads(r.read())["ready"]:
                        break
                time.sleep(0.5)
            result["recordings_ready_s"] = round(time.perf_counter() - t_start, 1)
            # Each backend readies its engine for what no recording holds once the recording is
            # there (a few seconds): a teacher starts the server before the class comes in.
            for b in (read_state(a.port) or {}).get("backends", []):
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline:
                    with urllib.request.urlopen(f"http://127.0.0.1:{b['port']}/lesson-status", timeout=30) as r:
                        if json.loads(r.read()).get("warm"):
                            break
                    time.sleep(0.5)
            result["backends_warm_s"] = round(time.perf_counter() - t_start, 1)
            # Where node 03's recorded branch (sharing on) ends: a question is asked after it, so
            # the page sends that step (`from`) and keeps the steps before as they were.
            with urllib.request.urlopen(base + "/lesson-live?node=radix&sharing=1", timeout=120) as r:
                after = json.loads(r.read())["steps"][-1]
            probes = [{} for _ in range(a.probes)]
            def niced(target, *args):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), a.clients_nice)  # (this thread, its children)
                target(*args)

            # --clients-nice: the students' side stands for their own devices. The crowd and the
            # Chromiums run niced, in sessions niced too; the typers, whose questions are timed, run
            # apart at the normal priority (light: one request each), so that a niced measuring
            # process does not add its own waits to what it measures.
            typers_out = None
            start_at = time.time() + 2.0  # (the class comes in from then: every part of it)
            if a.clients_nice:
                ctx = multiprocessing.get_context("fork")  # (before any thread of ours starts)
                typers_out = ctx.Queue()
                typers = ctx.Process(target=_typers_apart, args=(typers_out, "127.0.0.1", a.port, a.students,
                                                                 a.arrive_s, a.typers, after, start_at))
                typers.start()
                # (this process's session: the crowd; the server's processes run in their own)
                result["autogroups_reniced"] = renice_autogroup(os.getpid(), a.clients_nice)
            threads = [threading.Thread(target=niced, args=(chromium_probe, base, out, 24, a.clients_nice))
                       for out in probes]
            for t in threads:
                t.start()
            crowd_out: list = []
            args = ("127.0.0.1", a.port, a.students, a.arrive_s, a.typers, after, start_at)
            crowd_thread = threading.Thread(target=niced, args=(
                lambda: crowd_out.append(asyncio.run(crowd(*args, part="others" if typers_out else "all"))),))
            crowd_thread.start()
            flood_out: list = []
            flood_thread = threading.Thread(target=niced, args=(lambda: flood_out.append(asyncio.run(
                flood("127.0.0.1", a.port, a.flood, a.flood_s, after, start_at))),)) if a.flood else None
            if flood_thread:
                flood_thread.start()
            crowd_thread.join()
            if flood_thread:
                flood_thread.join()
                result["flood"] = flood_out[0]
            visits, lives = crowd_out[0]
            if typers_out:
                more_visits, lives = typers_out.get(timeout=600)
                visits += more_visits
                typers.join()
            for t in threads:
                t.join()
            # The end of the lesson: everyone hands in within HANDIN_S seconds
            handins = asyncio.run(class_hands_in("127.0.0.1", a.port, a.students, a.handin_s))
            result["handin"] = {**summary([h["s"] for h in handins if h["ok"]]),
                                "failed": sum(1 for h in handins if not h["ok"]), **stored_handins(a.students)}
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    ok = [v["s"] for v in visits if v["status"] == 200]
    result["arrival"] = {**summary(ok), "busy": sum(v["busy"] for v in visits),
                         "failed": sum(1 for v in visits if v["status"] != 200 or v.get("failed")),
                         "bytes_per_student": statistics.median([v["bytes"] for v in visits if v["status"] == 200] or [0])}
    result["live_question"] = {**summary([lv["ready_s"] for lv in lives if "ready_s" in lv]),
                               "server_wait": summary([lv["server_wait_s"] for lv in lives if "ready_s" in lv]),
                               "server_compute": summary([lv["compute_s"] for lv in lives if "ready_s" in lv]),
                               "errors": [lv["error"] for lv in lives if "error" in lv]}
    clicks = [c for p in probes for c in p.get("clicks_s", [])]
    result["chromium"] = {"ready_s": [round(p.get("ready_s", float("nan")), 2) for p in probes],
                          "click_ms": summary(clicks, 1000), "unchanged": sum(p.get("unchanged", 0) for p in probes),
                          "play_steps_per_s": [round(p.get("play_steps_per_s", float("nan")), 2) for p in probes],
                          "scroll_to_node_s": [round(p.get("scroll_s", float("nan")), 3) for p in probes],
                          "typed_question_s": [round(p.get("typed_s", float("nan")), 3) for p in probes],
                          "websockets": sum(len(p.get("websockets", [])) for p in probes),
                          "requests_during_actions": sum(len(p.get("requests_during_actions", [])) for p in probes),
                          "requests_seen": sorted({u.split("?")[0] for p in probes
                                                   for u in p.get("requests_during_actions", [])})[:10],
                          "self_check_s": [round(p.get("self_check_s", float("nan")), 3) for p in probes],
                          "by_action_ms": {k: v for p in probes for k, v in p.get("by_action", {}).items()},
                          "errors": [p.get("last_error") for p in probes if p.get("last_error")]}
    text = json.dumps(result, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
