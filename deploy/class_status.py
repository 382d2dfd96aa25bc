"""The class server's status page: /status (HTML, refreshes itself) and /status.json.

For the teacher (or whoever runs the room): per backend whether it is up, its restarts, and what
it says of itself on its own /metrics (127.0.0.1, its metrics port; kvviz/process/metrics.py):
live sessions, pages built, nodes built late, the timeline memo's size and hit rate, and its CPU
and memory (prometheus_client's process collector: `process_cpu_seconds_total`,
`process_resident_memory_bytes`); and the machine's load. Counts only: nothing about any student.

deploy/class_server.py runs it on a thread and has nginx proxy /status to it. The metrics are
read with prometheus_client's own parser (installed with the lesson: requirements.txt), imported
when first needed so that class_server.py itself still imports with the standard library alone.
"""

from __future__ import annotations

import html
import json
import os
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SAMPLE_S = 2.0
CPU = "process_cpu_seconds"  # (a counter: its sample is process_cpu_seconds_total)
RSS = "process_resident_memory_bytes"
STARTED = "process_start_time_seconds"  # (a restarted backend starts its CPU count again)


def parse(text: str) -> dict[str, float]:
    """Prometheus text as {family: value}, each family's samples summed over their labels (a
    counter's `_total`; the counters' creation times, `_created`, left out)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name.endswith("_created"):
            continue
        for sample in family.samples:
            if sample.name in (family.name, f"{family.name}_total"):
                out[family.name] = out.get(family.name, 0.0) + sample.value
    return out


def scrape(port: int) -> dict[str, float]:
    """A backend's metrics (parse), from its /metrics; empty when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as r:
            text = r.read().decode()
    except OSError:
        return {}
    return parse(text)


def is_up(backend) -> bool:
    return backend.proc is not None and backend.proc.poll() is None


class Status:
    """Reads the backends' metrics every SAMPLE_S seconds: CPU % needs two readings."""

    def __init__(self, backends, clock=time.monotonic):
        self.backends = backends  # objects with .index, .port, .metrics_port, .proc, .restarts
        self.clock = clock
        self._last: dict[int, tuple[float, float, float]] = {}  # index: (started, when, CPU seconds)
        self._cpu: dict[int, float] = {}

    def sample(self) -> None:
        now = self.clock()
        for b in self.backends:
            m = scrape(b.metrics_port) if is_up(b) else {}
            if CPU not in m:
                self._cpu.pop(b.index, None)
                self._last.pop(b.index, None)
                continue
            started = m.get(STARTED, 0.0)
            if b.index in self._last and self._last[b.index][0] == started:
                _, t0, c0 = self._last[b.index]
                self._cpu[b.index] = 100 * (m[CPU] - c0) / max(now - t0, 1e-6)
            self._last[b.index] = (started, now, m[CPU])

    def report(self) -> dict:
        rows = []
        for b in self.backends:
            up = is_up(b)
            m = scrape(b.metrics_port) if up else {}
            hits, misses = m.get("kvviz_memo_hits", 0.0), m.get("kvviz_memo_misses", 0.0)
            rows.append({
                "backend": b.index, "port": b.port, "up": up, "restarts": b.restarts,
                "cpu_percent": round(self._cpu[b.index], 1) if up and b.index in self._cpu else None,
                "rss_mb": round(m[RSS] / 2**20, 1) if RSS in m else None,
                "sessions": int(m.get("kvviz_sessions", 0)),
                "pages_built": int(m.get("kvviz_pages_built", 0)),
                "nodes_built": int(m.get("kvviz_nodes_built", 0)),
                "memo_states": int(m.get("kvviz_memo_states", 0)),
                "memo_hit_rate": round(hits / (hits + misses), 3) if hits + misses else None,
                "lessons_alive": int(m.get("kvviz_lessons_alive", 0)),
            })
        return {"time": time.strftime("%H:%M:%S"), "load_average": list(os.getloadavg()),
                "cores": os.cpu_count(), "sessions": sum(r["sessions"] for r in rows), "backends": rows}


def shown(value) -> str:
    return "–" if value is None else str(value)


def page(report: dict) -> str:
    e = html.escape
    head = ["backend", "up", "sessions", "CPU %", "memory MB", "pages built", "nodes built", "memo states",
            "memo hits", "restarts"]
    body = "".join(
        "<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in (
            r["backend"], "yes" if r["up"] else "DOWN", r["sessions"], shown(r["cpu_percent"]),
            shown(r["rss_mb"]), r["pages_built"], r["nodes_built"], r["memo_states"],
            "–" if r["memo_hit_rate"] is None else f"{100 * r['memo_hit_rate']:.0f}%", r["restarts"]))
        + "</tr>"
        for r in report["backends"])
    load = ", ".join(f"{x:.1f}" for x in report["load_average"])
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='refresh' content='3'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>kvviz class server</title>"
            f"<style>body{{font:18px system-ui,sans-serif;margin:1.5rem;color:#16202a}}"
            f"table{{border-collapse:collapse}}"
            f"td,th{{border:1px solid #d5dbe3;padding:.3rem .7rem;text-align:right}}th{{background:#f6f8fb}}"
            f"</style>"
            f"</head><body><h1>kvviz class server</h1><p><b>{report['sessions']}</b> students connected · "
            f"load average {e(load)} on {report['cores']} cores · {e(report['time'])} "
            f"(refreshes every 3 s)</p>"
            f"<table><tr>{''.join(f'<th>{h}</th>' for h in head)}</tr>{body}</table>"
            f"<p>A load average above the number of cores means students wait. "
            f"/status.json has the same as data.</p>"
            f"</body></html>")


def serve(status: Status, port: int) -> ThreadingHTTPServer:
    """Serve /status and /status.json on 127.0.0.1:`port` (a daemon thread); also samples CPU."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            report = status.report()
            if self.path.split("?")[0] == "/status.json":
                body, kind = json.dumps(report).encode(), "application/json"
            elif self.path.split("?")[0] == "/status":
                body, kind = page(report).encode(), "text/html; charset=utf-8"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):  # (quiet: nginx logs the requests)
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def sampler():
        while True:
            status.sample()
            time.sleep(SAMPLE_S)

    threading.Thread(target=sampler, daemon=True).start()
    return server
