"""The class benchmark's report: each part's figures summarised (n, p50, p95, max), a table of
the goals' figures, and the whole run as JSON (benchmarks/results/classroom-<UTC time>.json
unless --json names a file)."""

from __future__ import annotations

import datetime
import json
import resource
import statistics
from pathlib import Path

from benchmarks import common
from benchmarks.common import percentile

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


def summary(values: list[float], scale: float = 1.0) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(statistics.median(values) * scale, 3),
            "p95": round(percentile(values, 95) * scale, 3), "max": round(max(values) * scale, 3)}


def machine(load_before: tuple[float, ...]) -> dict:
    """The machine (benchmarks/common.py) and this process: the students' CPU and memory."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {**common.machine(load_before), "client_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "client_max_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def arrival(visits: list[dict]) -> dict:
    ok = [v for v in visits if v["status"] == 200]
    return {**summary([v["s"] for v in ok]), "busy": sum(v["busy"] for v in visits),
            "failed": sum(1 for v in visits if v["status"] != 200 or v.get("failed")),
            "bytes_per_student": statistics.median([v["bytes"] for v in ok] or [0])}


def live(answers: list[dict]) -> dict:
    ok = [a for a in answers if "ready_s" in a]
    return {**summary([a["ready_s"] for a in ok]), "server_wait": summary([a["server_wait_s"] for a in ok]),
            "server_compute": summary([a["compute_s"] for a in ok]),
            "errors": [a["error"] for a in answers if "error" in a]}


CLASS_CHANNEL = ("/lesson-class", "/lesson-report")  # (the roster and the class state: not a click's)


def nginx_during_actions(access_log: Path | None, probes: list[dict], address: str = "127.0.0.1") -> dict:
    """The requests nginx logged from the Chromium probes' address (the crowd sends from 127.1.x.y)
    while a probe acted, the class's own channel apart: what a scripted action cost the server."""
    windows = [w for p in probes for w in p.get("acting_windows", []) if w[1] is not None]
    if access_log is None or not access_log.is_file():
        return {"log": None}
    seen, channel = [], 0
    for line in access_log.read_text(errors="replace").splitlines():
        head, _, rest = line.partition(" [")
        stamp, _, request = rest.partition("] ")
        try:
            t = datetime.datetime.fromisoformat(stamp).timestamp()
        except ValueError:
            continue
        # ($time_iso8601 has whole seconds: a window is widened to them)
        if head != address or not any(a - 1 <= t <= b + 1 for a, b in windows):
            continue
        path = request.split(" ")[1] if request.count(" ") >= 2 else request
        if path.split("?")[0].endswith(CLASS_CHANNEL):
            channel += 1
        else:
            seen.append(path)
    return {"requests": len(seen), "seen": sorted({u.split("?")[0] for u in seen})[:10],
            "class_channel": channel, "windows": len(windows)}


def by_action(probes: list[dict]) -> dict[str, list[float]]:
    """Each scripted action's click → number times (ms), every probe's together."""
    out: dict[str, list[float]] = {}
    for p in probes:
        for k, v in p.get("by_action", {}).items():
            out.setdefault(k, []).extend(v)
    return out


def chromium(probes: list[dict]) -> dict:
    def each(key: str, digits: int = 2) -> list[float]:
        return [round(p.get(key, float("nan")), digits) for p in probes]

    sent = [u for p in probes for u in p.get("requests_during_actions", [])]
    clicks = [c for p in probes for c in p.get("clicks_s", [])]
    return {"ready_s": each("ready_s"), "settled_s": each("settled_s"), "click_ms": summary(clicks, 1000),
            "unchanged": sum(p.get("unchanged", 0) for p in probes),
            "play_steps_per_s": each("play_steps_per_s"),
            "scroll_to_node_s": each("scroll_s", 3), "typed_question_s": each("typed_s", 3),
            "websockets": sum(len(p.get("websockets", [])) for p in probes),
            "requests_during_actions": len(sent),
            "requests_seen": sorted({u.split("?")[0] for u in sent})[:10],
            "self_check_s": each("self_check_s", 3),
            "by_action_ms": by_action(probes),
            "errors": [p.get("last_error") for p in probes if p.get("last_error")]}


def _fmt(s: dict, unit: str = " s") -> str:
    return " / ".join(f"{s[k]:g}" for k in ("p50", "p95", "max")) + unit if s.get("n") else "–"


def table(r: dict) -> str:
    """The goals' figures (docs/benchmarks.md, "A class of 120 on the recorded lesson")."""
    a, lv, c, h, srv = r["arrival"], r["live_question"], r["chromium"], r["handin"], r["server"]
    rows = [
        ("ready page, p50 / p95 / max; busy pages; failed", f"{_fmt(a)}; {a['busy']}; {a['failed']}"),
        ("typed questions (protocol), p50 / p95 / max", f"{_fmt(lv)}; errors {len(lv['errors'])}"),
        ("  of which the engine computing (`Server-Timing`)", _fmt(lv["server_compute"])),
        ("click → changed number in Chromium, p50 / p95 / max", _fmt(c["click_ms"], " ms")),
        ("websockets opened by the Chromium pages; requests during their actions",
         f"{c['websockets']}; {c['requests_during_actions']}"),
        ("requests nginx logged from the Chromium pages during their actions (the class's own apart)",
         f"{r.get('nginx_during_actions', {}).get('requests', '–')} "
         f"({r.get('nginx_during_actions', {}).get('class_channel', '–')} roster / class state)"),
        ("Play's pace in Chromium (nominal 4 steps/s)", ", ".join(map(str, c["play_steps_per_s"])) or "–"),
        ("scroll to node 03 / typed question / self-check in Chromium (s)",
         " / ".join(", ".join(map(str, c[k])) or "–" for k in ("scroll_to_node_s", "typed_question_s",
                                                              "self_check_s"))),
        ("hand-ins: p50 / p95 / max; failed; stored, lost, doubled",
         f"{_fmt(h)}; {h['failed']}; {h['stored']}, {h['lost']}, {h['doubled']}"),
        ("server CPU while the class arrives, cores busy: backends / machine",
         f"{srv['cpu']['cores_busy']:.2f} / {srv['cpu']['machine_cores_busy']:.2f}"),
        ("server memory (RSS / PSS): before / after the class",
         f"{srv['memory_mb']['before']['rss_mb']:.0f} / {srv['memory_mb']['before']['pss_mb']:.0f} → "
         f"{srv['memory_mb']['after']['rss_mb']:.0f} / {srv['memory_mb']['after']['pss_mb']:.0f} MB"),
    ]
    for path in ("/lesson-status", "/app") if "pages" in r else ():
        rows.append((f"{path} meanwhile (--probe-pages), p50 / p95 / max", _fmt(summary(
            [p["s"] for p in r["pages"] if p["path"] == path and p["status"] == 200], 1000), " ms")))
    if "flood" in r:
        rows.append(("the flood's outcomes", json.dumps(r["flood"]["outcomes"])))
    return "\n".join(["| | |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in rows)])


def write(r: dict, path: Path | None) -> Path:
    path = path or RESULTS_DIR / f"classroom-{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%SZ}.json"
    common.write_json(path, r)
    return path
