"""One address flooding the live engine while the class types: `benchmarks.classroom_played --flood RATE`.

A script (or a student's page gone wrong) at FLOOD_ADDRESS, which is no student's (they are
127.1.x.y), sends RATE distinct live questions a second for FLOOD_S seconds, each without
waiting for the one before (as fast as it can): `/lesson-live` as the played page sends it,
each question different (none answered from the server's kept answers). What came back is
counted by kind: answers (200), "slow down" (429), other statuses (nginx's 502/504 ...), and
failures to connect or to get an answer in time. The class's own typed questions are timed as
in any run of the benchmark: compare a run with `--flood 50` to the same run without it.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections import Counter

from benchmarks.classroom import http_get

FLOOD_ADDRESS = "127.2.0.1"
FLOOD_TIMEOUT_S = 60


async def _one(host: str, port: int, n: int, after: int) -> tuple[str, float]:
    q = urllib.parse.urlencode([("node", "radix"), ("sharing", "1"), ("op", f"ask:Flood question number {n}?"),
                                ("from", str(after))])
    t0 = time.perf_counter()
    try:
        status, headers, body = await http_get(host, port, f"/lesson-live?{q}", FLOOD_ADDRESS, timeout=FLOOD_TIMEOUT_S)
    except TimeoutError:
        return "timeout", time.perf_counter() - t0
    except OSError:
        return "connection failed", time.perf_counter() - t0
    if status == 429:
        try:
            said = json.loads(body).get("message", "")
        except ValueError:
            said = ""
        kind = "429 with a message" if said and headers.get("retry-after") else "429 without a message or Retry-After"
        return kind, time.perf_counter() - t0
    return str(status), time.perf_counter() - t0


async def flood(host: str, port: int, rate: float, seconds: float, after: int, start_at: float) -> dict:
    """RATE requests a second for SECONDS from FLOOD_ADDRESS, from the wall-clock time `start_at`."""
    await asyncio.sleep(max(0.0, start_at - time.time()))
    t0 = time.perf_counter()
    tasks = []
    for n in range(int(rate * seconds)):
        await asyncio.sleep(max(0.0, t0 + n / rate - time.perf_counter()))
        tasks.append(asyncio.create_task(_one(host, port, n, after)))
    results = await asyncio.gather(*tasks)
    answered = sorted(s for kind, s in results if kind == "200")
    return {"rate_per_s": rate, "seconds": seconds, "sent": len(results),
            "outcomes": dict(Counter(kind for kind, _s in results)),
            "answered_p50_s": round(answered[len(answered) // 2], 3) if answered else None}
