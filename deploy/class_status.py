"""The class server's status page: /status (HTML, refreshes itself) and /status.json.

For the teacher (or whoever runs the room): per backend whether it is up, its restarts, its CPU
and memory (from /proc), and what it counts itself (kvviz/web/metrics.py, scraped from its
127.0.0.1 metrics port): live sessions, pages built, nodes built late, the timeline memo's size
and hit rate; and the machine's load. Counts only: nothing about any student.

Standard library only, like deploy/class_server.py, which runs it on a thread and has nginx
proxy /status to it.
"""

from __future__ import annotations

import html
import json
import os
import re
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

METRIC_RE = re.compile(r'^(kvviz_[a-z_]+?)(?:_total)?(\{[^}]*\})?\s+([0-9.eE+-]+)$', re.M)
SAMPLE_S = 2.0


def proc_cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def proc_rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


def scrape(port: int) -> dict[str, float]:
    """A backend's kvviz_* metrics, summed over labels (empty when it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for name, _labels, value in METRIC_RE.findall(text):
        if name.endswith("_created"):
            continue
        out[name] = out.get(name, 0.0) + float(value)
    return out


class Status:
    """Samples the backends every SAMPLE_S seconds (CPU needs two readings)."""

    def __init__(self, backends):
        self.backends = backends  # objects with .index, .port, .metrics_port, .proc, .restarts
        self._last: dict[int, tuple[float, float]] = {}
        self._cpu: dict[int, float] = {}

    def sample(self) -> None:
        now = time.monotonic()
        for b in self.backends:
            pid = b.proc.pid if b.proc is not None and b.proc.poll() is None else None
            cpu = proc_cpu_seconds(pid) if pid else None
            if cpu is None:
                self._cpu.pop(b.index, None)
                continue
            if pid in self._last:
                t0, c0 = self._last[pid]
                self._cpu[b.index] = 100 * (cpu - c0) / max(now - t0, 1e-6)
            self._last[pid] = (now, cpu)

    def report(self) -> dict:
        rows = []
        for b in self.backends:
            up = b.proc is not None and b.proc.poll() is None
            m = scrape(b.metrics_port) if up else {}
            hits, misses = m.get("kvviz_memo_hits", 0.0), m.get("kvviz_memo_misses", 0.0)
            rows.append({
                "backend": b.index, "port": b.port, "up": up, "restarts": b.restarts,
                "cpu_percent": round(self._cpu.get(b.index, 0.0), 1) if up else None,
                "rss_mb": round(proc_rss_mb(b.proc.pid) or 0, 1) if up else None,
                "sessions": int(m.get("kvviz_sessions", 0)), "pages_built": int(m.get("kvviz_pages_built", 0)),
                "nodes_built": int(m.get("kvviz_nodes_built", 0)), "memo_states": int(m.get("kvviz_memo_states", 0)),
                "memo_hit_rate": round(hits / (hits + misses), 3) if hits + misses else None,
                "lessons_alive": int(m.get("kvviz_lessons_alive", 0)),
            })
        return {"time": time.strftime("%H:%M:%S"), "load_average": list(os.getloadavg()),
                "cores": os.cpu_count(), "sessions": sum(r["sessions"] for r in rows), "backends": rows}


def page(report: dict) -> str:
    e = html.escape
    head = ["backend", "up", "sessions", "CPU %", "memory MB", "pages built", "nodes built", "memo states",
            "memo hits", "restarts"]
    body = "".join(
        "<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in (
            r["backend"], "yes" if r["up"] else "DOWN", r["sessions"], r["cpu_percent"], r["rss_mb"],
            r["pages_built"], r["nodes_built"], r["memo_states"],
            "–" if r["memo_hit_rate"] is None else f"{100 * r['memo_hit_rate']:.0f}%", r["restarts"])) + "</tr>"
        for r in report["backends"])
    load = ", ".join(f"{x:.1f}" for x in report["load_average"])
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta http-equiv='refresh' content='3'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>kvviz class server</title>"
            f"<style>body{{font:18px system-ui,sans-serif;margin:1.5rem;color:#16202a}}table{{border-collapse:collapse}}"
            f"td,th{{border:1px solid #d5dbe3;padding:.3rem .7rem;text-align:right}}th{{background:#f6f8fb}}</style>"
            f"</head><body><h1>kvviz class server</h1><p><b>{report['sessions']}</b> students connected · "
            f"load average {e(load)} on {report['cores']} cores · {e(report['time'])} (refreshes every 3 s)</p>"
            f"<table><tr>{''.join(f'<th>{h}</th>' for h in head)}</tr>{body}</table>"
            f"<p>A load average above the number of cores means students wait. /status.json has the same as data.</p>"
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
