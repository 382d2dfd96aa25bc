"""The class server's status page (deploy/class_status.py), without a server: each backend in
numbers from its own /metrics (prometheus_client's text, read with its parser). The page on a
running class server is checked in tests/deploy/test_classroom_smoke.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy"))
import class_status  # noqa: E402  (deploy/ is scripts, not a package)

sys.path.pop(0)


def test_the_status_page_reports_each_backend_in_numbers_only(monkeypatch):
    class Proc:
        def poll(self):
            return None

    class FakeBackend:
        index, port, metrics_port, restarts, proc = 0, 5100, 1, 2, Proc()

    cpu_seconds, now = [10.0], [100.0]
    monkeypatch.setattr(class_status, "scrape", lambda port: {
        "kvviz_sessions": 3.0, "kvviz_pages_built": 7.0, "kvviz_nodes_built": 4.0, "kvviz_memo_states": 90.0,
        "kvviz_memo_hits": 30.0, "kvviz_memo_misses": 10.0, "process_cpu_seconds": cpu_seconds[0],
        "process_resident_memory_bytes": 300 * 2**20, "process_start_time_seconds": 1.7e9})
    status = class_status.Status([FakeBackend()], clock=lambda: now[0])
    status.sample()
    assert status.report()["backends"][0]["cpu_percent"] is None  # (one reading: no rate yet)
    cpu_seconds[0], now[0] = 10.5, 102.0
    status.sample()
    report = status.report()
    (row,) = report["backends"]
    assert report["sessions"] == 3 and row["up"] and row["restarts"] == 2 and row["pages_built"] == 7
    assert row["memo_hit_rate"] == 0.75 and row["rss_mb"] == 300.0 and row["cpu_percent"] == 25.0
    page = class_status.page(report)
    assert "<b>3</b> students connected" in page and "75%" in page and "25.0" in page


def test_the_status_page_reads_prometheus_text_with_its_parser():
    from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

    registry = CollectorRegistry()
    Counter("kvviz_pages_built", "Pages", registry=registry).inc(7)
    nodes = Counter("kvviz_nodes_built", "Nodes", ["node"], registry=registry)
    nodes.labels("radix").inc(2)
    nodes.labels("paging").inc(3)
    Gauge("process_resident_memory_bytes", "RSS", registry=registry).set(100 * 2**20)
    # (counters summed over their labels; their creation times, `_created`, left out)
    assert class_status.parse(generate_latest(registry).decode()) == {
        "kvviz_pages_built": 7.0, "kvviz_nodes_built": 5.0, "process_resident_memory_bytes": 100 * 2**20}


def test_a_backends_own_metrics_hold_its_cpu_and_memory():
    """What the status page reads from a backend: prometheus_client's process collector, beside
    the lesson's counts (kvviz/process/metrics.py), from the same registry."""
    from prometheus_client import REGISTRY, generate_latest

    from kvviz.process import metrics  # noqa: F401  (the lesson's metrics, registered)

    m = class_status.parse(generate_latest(REGISTRY).decode())
    assert m["process_cpu_seconds"] > 0 and m["process_resident_memory_bytes"] > 10 * 2**20
    assert m["process_start_time_seconds"] > 0 and "kvviz_sessions" in m


def test_a_backend_serves_its_metrics_from_its_start_before_any_student(tmp_path):
    """The status page reads each backend's /metrics: a backend serves them from its start
    (kvviz/serve/routes.py `start`), not from its first session. (A backend that nginx had passed
    over while it was slow to answer, under a loaded machine's CI, had no session for 150 s, so no
    metrics, and the status page said nothing of it.)"""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tools.browser import free_port

    port = free_port()
    check = ("import urllib.request, kvviz.serve.routes as r; r.start(); "
             f"text = urllib.request.urlopen('http://127.0.0.1:{port}/metrics', timeout=30).read().decode(); "
             "assert 'kvviz_memo_states' in text and 'process_cpu_seconds_total' in text, text[:500]; "
             "assert 'kvviz_sessions 0.0' in text, text[:500]; print('served')")
    env = os.environ | {"KVVIZ_RECORDINGS": "off", "KVVIZ_METRICS_PORT": str(port),
                        "KVVIZ_CACHE": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", check], cwd=Path(__file__).resolve().parents[2], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "served" in done.stdout, done.stderr[-2000:]
