"""The class's HTTP clients on the recorded lesson (`/`), each from its own loopback address: a
first visit (`/`, its redirect, the page and everything it links, nothing cached; a 503 is a busy
page), a live question (timed to the whole answer, with its `Server-Timing`), a hand-in (then the
class's store read), and the flood (FLOOD_ADDRESS sending RATE live questions a second unawaited).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
import urllib.parse
from collections import Counter

from tools.loopback_class import fetch_all, http_get, http_request, page_resources, source_address

QUESTIONS = ["What is a page?", "Why share a prefix?", "What is a block?", "When is a block freed?",
             "What does the cache hold?", "What is eviction?", "Why are pages small?", "What is a token?",
             "What is prefill?", "What is decode?", "Who owns a block?", "What is a radix tree?"]
FLOOD_ADDRESS, PAGES_ADDRESS = "127.2.0.1", "127.2.0.2"
FLOOD_TIMEOUT_S = 60
HANDIN = {"predictions": [{"node": "radix", "question": "With sharing on, how many blocks?",
                           "predicted": "18", "outcome": "18", "right": True}],
          "checks": [{"key": "gap_after_free", "question": "What will LARGEST GAP read?", "typed": "8",
                      "outcome": "8", "feedback": "Right", "right": True}],
          "answer": "Paging borrows virtual memory's pages; sharing borrows shared pages.", "query": ""}


# Past the first 12: every typer a question of its own (a question asked twice is answered once)
TEMPLATES = ["Why does {} matter?", "How big is {}?", "When does {} fill?", "Where does {} live?",
             "Can {} be shared?", "How is {} stored?", "Why cache {}?", "What limits {}?", "Who reads {}?"]
TOPICS = ["a page", "a block", "the prefix", "the cache", "a token", "eviction", "prefill", "decode",
          "a radix tree", "the pool", "a request", "the KV cache"]


def question(k: int) -> str:
    """The k-th typer's question: the 12 QUESTIONS, then TEMPLATES x TOPICS (120 distinct in all)."""
    if k < len(QUESTIONS):
        return QUESTIONS[k]
    k -= len(QUESTIONS)
    return TEMPLATES[k // len(TOPICS) % len(TEMPLATES)].format(TOPICS[k % len(TOPICS)])


def live_path(question: str, after: int) -> str:
    q = [("node", "radix"), ("sharing", "1"), ("op", f"ask:{question}"), ("from", str(after))]
    return f"/lesson-live?{urllib.parse.urlencode(q)}"


async def first_visit(host: str, port: int, source: str) -> dict:
    """`/`, its redirect, the page and everything it links, from `source`, nothing cached."""
    t0 = time.perf_counter()
    status, headers, _ = await http_get(host, port, "/", source)
    path = urllib.parse.urlsplit(headers.get("location", "/")).path if status == 302 else "/"
    path = path if path.startswith("/") else "/" + path
    status, headers, body = await http_get(host, port, path, source)
    if status != 200:
        return {"status": status, "busy": status == 503, "s": time.perf_counter() - t0}
    files = page_resources(body.decode("utf-8", "replace"), path)
    got = await fetch_all(host, port, files, source, decompress=False)  # (the browser's work)
    return {"status": 200, "busy": False, "s": time.perf_counter() - t0, "path": path, "files": len(got) + 1,
            "bad": [p for p, (st, _n) in zip(files, got, strict=True) if st != 200][:3],
            "failed": sum(1 for s, _n in got if s != 200),
            "bytes": int(headers["wire_bytes"]) + sum(n for _s, n in got)}


async def live_question(host: str, port: int, k: int, source: str, after: int) -> dict:
    t0 = time.perf_counter()
    try:
        path = live_path(question(k), after)
        status, headers, body = await http_get(host, port, path, source)
        answer = json.loads(body)
    except (TimeoutError, OSError, ValueError) as e:
        return {"error": f"{type(e).__name__}: {e}"[:200]}
    if status != 200 or not answer.get("ok") or not answer.get("rows"):
        return {"error": f"{status}: {answer.get('message', '')}"[:200]}
    timing = dict(re.findall(r"(\w+);dur=([\d.]+)", headers.get("server-timing", "")))
    return {"ready_s": time.perf_counter() - t0, "states": len(answer["rows"]),
            "server_wait_s": float(timing.get("wait", "nan")) / 1000,
            "compute_s": float(timing.get("compute", "nan")) / 1000}


async def crowd(host: str, port: int, students: int, arrive_s: float, typers: int,
                after: int, start_at: float, enter_within: float | None = None,
                part: str = "all") -> tuple[list, list]:
    """The class arriving from the wall-clock time `start_at`: every student (`part` "all"), only
    the TYPERS ("typers") or only the others ("others"), the same students and times in each. A
    typer reads 1-5 s after arriving, then types; with `enter_within`, the typers press Enter
    together, within that many seconds from 1 s after the last arrival (the teacher's word)."""
    rng = random.Random(7)
    arrivals = sorted(rng.uniform(0, arrive_s) for _ in range(students))
    typing = {i: k for k, i in enumerate(rng.sample(range(students), min(typers, students)))}
    reads = {i: rng.uniform(1, 5) for i in sorted(typing)}  # (reads, then types)
    if enter_within is not None:
        word = arrive_s + 1.0
        reads = {i: word + rng.uniform(0, enter_within) - arrivals[i] for i in sorted(typing)}
    mine = [i for i in range(students) if part == "all" or (i in typing) == (part == "typers")]

    async def one(i: int):
        await asyncio.sleep(max(0.0, start_at + arrivals[i] - time.time()))
        visit = await first_visit(host, port, source_address(i))
        live = None
        if i in typing:  # (reads[i]: from its arrival)
            await asyncio.sleep(max(0.0, start_at + arrivals[i] + reads[i] - time.time()))
            live = await live_question(host, port, typing[i], source_address(i), after)
        return visit, live

    results = await asyncio.gather(*(one(i) for i in mine))
    return [v for v, _ in results], [lv for _, lv in results if lv is not None]


def typers_apart(out, *args) -> None:
    """The typers, in a process of their own session at the normal priority (--clients-nice)."""
    os.setsid()
    out.put(asyncio.run(crowd(*args, part="typers")))


async def hand_in(host: str, port: int, i: int, source: str) -> dict:
    """Student i hands in what the page's Hand in sends (one POST, from its own address)."""
    body = json.dumps({**HANDIN, "student_id": f"{i:032x}", "name": f"student {i}"}).encode()
    t0 = time.perf_counter()
    try:
        status, _h, answer = await http_request(host, port, "POST", "/lesson-handin", source, body,
                                                {"Content-Type": "application/json"})
        ok = status == 200 and b'"ok": true' in answer
        return {"status": status, "s": time.perf_counter() - t0, "ok": ok}
    except (TimeoutError, OSError, ValueError, IndexError) as e:
        return {"status": 0, "s": time.perf_counter() - t0, "ok": False, "error": str(e)[:120]}


async def class_hands_in(host: str, port: int, students: int, within_s: float) -> list[dict]:
    async def one(i: int):
        await asyncio.sleep(within_s * i / max(students, 1))
        return await hand_in(host, port, i, source_address(i))
    return list(await asyncio.gather(*(one(i) for i in range(students))))


def stored_handins(students: int) -> dict:
    """What the class's store holds after the hand-ins: lost, doubled, the pulse's count."""
    from kvviz.handin.pulse import pulse  # noqa: PLC0415
    from kvviz.handin.storage import Store  # noqa: PLC0415

    rows = [h for h in Store(os.environ["KVVIZ_DB"]).handins() if h.name.startswith("student ")]
    return {"stored": len(rows), "lost": students - len({h.student_id for h in rows}),
            "doubled": sum(1 for h in rows if h.submissions != 1),
            "pulse_students": {f"{p.kind} {p.node}": p.students for p in pulse(rows)}}


async def backend_pages(host: str, port: int, start_at: float, done) -> list[dict]:
    """--probe-pages: from PAGES_ADDRESS, as the class comes in and types (until `done` is set), a
    backend's small answer (/lesson-status) every 100 ms and, every fifth time, its live page
    (/app): what a question must not hold up on the backend that runs it."""
    await asyncio.sleep(max(0.0, start_at - time.time()))
    out: list[dict] = []
    while not done.is_set():
        path = "/app?node=radix" if len(out) % 5 == 4 else "/lesson-status"
        t0 = time.perf_counter()
        try:
            status = (await http_get(host, port, path, PAGES_ADDRESS, timeout=60))[0]
        except (TimeoutError, OSError):
            status = 0
        out.append({"path": path.split("?")[0], "s": time.perf_counter() - t0, "status": status})
        await asyncio.sleep(0.1)
    return out


async def _flooded(host: str, port: int, n: int, after: int) -> tuple[str, float]:
    t0 = time.perf_counter()
    try:
        status, headers, body = await http_get(host, port, live_path(f"Flood question number {n}?", after),
                                               FLOOD_ADDRESS, timeout=FLOOD_TIMEOUT_S)
    except TimeoutError:
        return "timeout", time.perf_counter() - t0
    except OSError:
        return "connection failed", time.perf_counter() - t0
    if status != 429:
        return str(status), time.perf_counter() - t0
    try:
        said = json.loads(body).get("message", "")
    except ValueError:
        said = ""
    if said and headers.get("retry-after"):
        return "429 with a message", time.perf_counter() - t0
    return "429 without a message or Retry-After", time.perf_counter() - t0


async def flood(host: str, port: int, rate: float, seconds: float, after: int, start_at: float) -> dict:
    """RATE requests a second for SECONDS from FLOOD_ADDRESS, from the wall-clock time `start_at`."""
    await asyncio.sleep(max(0.0, start_at - time.time()))
    t0 = time.perf_counter()
    tasks = []
    for n in range(int(rate * seconds)):
        await asyncio.sleep(max(0.0, t0 + n / rate - time.perf_counter()))
        tasks.append(asyncio.create_task(_flooded(host, port, n, after)))
    results = await asyncio.gather(*tasks)
    answered = sorted(s for kind, s in results if kind == "200")
    return {"rate_per_s": rate, "seconds": seconds, "sent": len(results),
            "outcomes": dict(Counter(kind for kind, _s in results)),
            "answered_p50_s": round(answered[len(answered) // 2], 3) if answered else None}
