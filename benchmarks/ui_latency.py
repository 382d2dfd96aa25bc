"""How long a student waits: from a click or key in the browser to the new metric text on screen.

    python -m benchmarks.ui_latency [--interactions N | --quick] [--busy K] [--json PATH]

Plans each node's interactions on a mirror of the page here, then (benchmarks/ui_latency_browser.py)
serves app.py with `panel serve` on a free port, opens each live node on its embed route
(/app?node=fragmentation, paging, radix) in headless Chromium (/usr/bin/chromium, or
$KVVIZ_CHROMIUM) and drives it as a student would, N interactions per node (default 50,
--quick 10), each after WARMUP_INTERACTIONS that are not counted:

    fragmentation  cycle: "Reserved length" slider +1 (ArrowUp on its handle), "Free R2",
                   slider -1 (ArrowDown), "Reset"
    paging         "Add request" (the prompt box holds the next prompt of the stream), and
                   "Reset" after 9 adds (the node's `practice` in kvviz/nodes), a classroom-sized session. Add
                   request computes the prompt and its first token, then plays on (one step
                   per play tick) until the request has finished: timed is the click to that
                   first update; the run then ends, untimed, before the next interaction
    radix          "Prefix sharing" on, off, on, ...

A disabled widget is skipped; an action that would change no metric card (e.g. a full pool)
becomes "Reset" (see `plan`).

Two figures per interaction:

latency (p50_ms, p95_ms): measured in the page. Just before the action a capture listener on
    `window` notes performance.now() at the action's `click` or `keydown` event (before any
    handler of the app runs); MutationObservers on the node's three metric cards (plus a check
    every animation frame) see the last of their `.kv-value` texts become the expected text,
    and the time is taken in the next animation frame, the one that paints it (`dom_*`: at the
    DOM change). The expected texts come from the mirror below and the texts before the action
    are checked too, so a partial or wrong update is never counted as done.
server-side share (server_ms_*): the Python work alone, timed in this process, not in the server.
    A mirror of the served page (the same `Lesson` and node page as app.py builds, rendered into
    a Bokeh Document) gets the same actions through its widgets (`clicks += 1`, slider `value`,
    checkbox `value`); each is timed from the widget change until every watcher has run: the
    state method, the engine, the snapshot, and the Panel panes and Bokeh models updated in
    place. Not included: serialising the changes, the websocket, the URL sync, the browser.
    The mirror runs before the server starts, so the two never compete for the CPUs.

The machine is shared: the load average before and after the run is in the output. --busy K
runs K CPU-bound processes alongside the whole run, to see the figures on a busier machine.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import datetime
import html
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import panel as pn
from bokeh.document import Document

from benchmarks.common import NUM_THREADS, format_table, machine, percentile, set_threads, write_json
from benchmarks.ui_latency_browser import PAUSE_S, drive
from kvviz.lesson import Lesson
from kvviz.nodes import LIVE
from tools.browser import Server

TARGET_P95_MS = 150.0  # issue 3, item 12: on-screen p95 on this machine, 50 interactions per node
DEFAULT_INTERACTIONS, QUICK_INTERACTIONS = 50, 10
WARMUP_INTERACTIONS = 2  # per node, first in the cycle, done in both phases but not counted


@dataclass(frozen=True)
class Action:
    """A widget, found by (part of) its label; a key pressed on it, else a click."""

    widget: str
    key: str | None = None

    @property
    def name(self) -> str:
        return f"{self.widget} {SLIDER_KEYS[self.key][0]}" if self.key else self.widget


SLIDER_KEYS = {"ArrowUp": ("+1", 1), "ArrowDown": ("-1", -1)}  # not → / ←: those are also shortcuts
RESET = Action("Reset")
# node -> (its metric cards, in order; the cycle of actions), from the lesson's registry
NODES = {n.key: (tuple(c.label for c in n.cards), tuple(Action(w, k) for w, k in n.practice)) for n in LIVE}


@dataclass(frozen=True)
class Interaction:
    """One planned action and what it must put on screen: the node's cards go from the texts
    `before` to `after` (label -> text; at least one differs)."""

    action: Action
    role: str  # the widget's ARIA role in the browser: button | slider | checkbox
    before: dict[str, str]
    after: dict[str, str]
    server_ms: float
    settled: dict[str, str] | None = None  # the texts once the play it started (Add request) ends

    @property
    def changed(self) -> list[str]:
        return [label for label in self.after if self.after[label] != self.before[label]]


# -- the mirror: the served page's Python side, in this process ------------------------------
class Mirror:
    """The node page app.py serves for `/app?node=<node>`, rendered into a Bokeh Document."""

    def __init__(self, node: str):
        self.node = node
        lesson = Lesson({"node": [node.encode()]})
        self.state = lesson.states[node]
        self.page = lesson.node_page(node)
        self.page.get_root(Document())  # so that updates reach Bokeh models, as in a session

    def cards(self) -> dict[str, str]:
        """label -> value text of every metric card (the markup of kvviz/metric_card.py)."""
        out = {}
        for pane in self.page.select(pn.pane.HTML):
            for label, value in re.findall(r'data-label="([^"]*)"[^>]*>.*?class="kv-value">([^<]*)<',
                                           str(pane.object), flags=re.S):
                out[html.unescape(label)] = html.unescape(value)
        return out

    def widget(self, action: Action):
        kinds = (pn.widgets.IntSlider,) if action.key else (pn.widgets.Button, pn.widgets.Checkbox)
        found = [w for w in self.page.select(pn.widgets.Widget)
                 if isinstance(w, kinds)
                 and action.widget.lower() in (getattr(w, "label", None) or w.name or "").lower()]
        if len(found) != 1:
            raise LookupError(f"node {self.node}: {len(found)} widgets labelled {action.widget!r}")
        return found[0]

    def act(self, action: Action) -> tuple[str, float]:
        """Do `action` through its widget, as the browser's message would; (role, seconds)."""
        w = self.widget(action)
        start = time.perf_counter()
        if action.key:
            lo, hi = w.start, w.end
            w.value = min(hi, max(lo, w.value + SLIDER_KEYS[action.key][1]))
            role = "slider"
        elif isinstance(w, pn.widgets.Checkbox):
            w.value = not w.value
            role = "checkbox"
        else:
            w.clicks += 1
            role = "button"
        return role, time.perf_counter() - start

    def play_until_idle(self) -> bool:
        """What the page's play timer does after Add request (not timed): tick until it stops.
        True if it was playing."""
        ticks = 0
        while self.state.playing:
            self.state.tick()
            ticks += 1
            if ticks > 10_000:
                raise RuntimeError(f"node {self.node}: still playing after {ticks} ticks")
        return ticks > 0


def plan(node: str, count: int) -> tuple[dict[str, str], list[Interaction]]:
    """The node's first cards and `count` interactions, each done and timed on a mirror.

    Going round the node's cycle: an action whose widget is disabled is skipped, as a person
    cannot press it; one that changes no card is replaced by Reset (e.g. a full pool); a Reset
    that changes no card (the state is already the starting point) is skipped. Every planned
    step names the text its card shows before it, which the browser checks: a mirror that went
    out of step with the server fails loudly instead of measuring the wrong update.
    """
    labels, cycle = NODES[node]
    mirror = Mirror(node)

    def node_cards() -> dict[str, str]:
        cards = mirror.cards()
        missing = [label for label in labels if label not in cards]
        if missing:
            raise LookupError(f"node {node}: no metric card {missing}; cards are {sorted(cards)}")
        return {label: cards[label] for label in labels}

    initial = cards = node_cards()
    out, position, idle = [], 0, 0
    while len(out) < count:
        if idle > 2 * len(cycle):
            raise RuntimeError(f"node {node}: no action of {[a.name for a in cycle]} changes a card {labels}")
        action = cycle[position % len(cycle)]
        position += 1
        if mirror.widget(action).disabled:
            idle += 1
            continue
        role, seconds = mirror.act(action)
        after = node_cards()
        if after == cards and action != RESET:
            action = RESET  # the server gets Reset instead of this action
            role, seconds = mirror.act(action)
            after = node_cards()
        settled = node_cards() if mirror.play_until_idle() else None
        if after == cards:
            idle += 1
            cards = settled or cards
            continue
        idle = 0
        out.append(Interaction(action, role, cards, after, 1000 * seconds, settled))
        cards = settled or after
    return initial, out


# -- statistics and report -------------------------------------------------------------------
def summary(frames: list[float], doms: list[float], server: list[float]) -> dict:
    figures = {
        "p50_ms": percentile(frames, 50), "p95_ms": percentile(frames, 95), "max_ms": max(frames),
        "dom_p50_ms": percentile(doms, 50), "dom_p95_ms": percentile(doms, 95),
        "server_ms_p50": percentile(server, 50), "server_ms_p95": percentile(server, 95),
    }
    return {**{k: float(v) for k, v in figures.items()}, "n": len(frames)}


def report(results: dict, interactions: int) -> str:
    cols = ["p50_ms", "p95_ms", "max_ms", "n", "server_ms_p50", "server_ms_p95"]
    rows = [[node, *(s[c] for c in cols)] for node, s in results["nodes"].items()]
    rows.append(["overall", *(results["overall"][c] for c in cols)])
    table = format_table(["node", "p50 ms", "p95 ms", "max ms", "n", "server p50 ms", "server p95 ms"], rows)
    act_rows = [[f"{node} · {name}", s["n"], s["p50_ms"], s["p95_ms"], s["server_ms_p50"]]
                for node, ns in results["nodes"].items() for name, s in ns["by_action"].items()]
    actions = format_table(["action", "n", "p50 ms", "p95 ms", "server p50 ms"], act_rows)
    m, o = results["machine"], results["overall"]
    met = "met" if o["target_met"] else "NOT met"
    note = "" if interactions == DEFAULT_INTERACTIONS else f" (set for {DEFAULT_INTERACTIONS} per node)"
    return "\n".join([
        table, "", actions, "",
        "latency: in the page, from the click/keydown event to the frame showing the new metric text; "
        "server: the Python handlers alone, timed in-process (mirror), the server-side share",
        f"target p95 <= {TARGET_P95_MS:.0f} ms{note}: {met} (overall p95 {o['p95_ms']:.1f} ms)",
        f"machine: {m['cpu_count']} CPUs, load average {m['load_before']} before, "
        f"{m['load_after']} after; {results['busy_processes']} busy process(es) alongside; "
        f"Chromium {m['chromium']}; {results['date']}",
    ])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--interactions", type=int, metavar="N",
                   help=f"interactions measured per node (default {DEFAULT_INTERACTIONS}; --quick: "
                        f"{QUICK_INTERACTIONS})")
    p.add_argument("--quick", action="store_true", help=f"{QUICK_INTERACTIONS} interactions per node")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    p.add_argument("--busy", type=int, default=0, metavar="K",
                   help="run K CPU-bound processes alongside the whole run (a busier machine; default 0)")
    args = p.parse_args(argv)
    if args.interactions is None:
        args.interactions = QUICK_INTERACTIONS if args.quick else DEFAULT_INTERACTIONS
    if args.interactions < 1:
        p.error("--interactions must be >= 1")
    if not 0 <= args.busy <= 64:
        p.error("--busy must be between 0 and 64")
    return args


@contextlib.contextmanager
def busy_processes(k: int):
    """K processes that each keep one CPU busy (a Python loop) until the block ends."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    set_threads(NUM_THREADS)  # as app.py does for the server
    load_before = os.getloadavg()
    count = WARMUP_INTERACTIONS + args.interactions
    with busy_processes(args.busy), contextlib.ExitStack() as stack:
        plans = {node: plan(node, count) for node in NODES}
        server = stack.enter_context(Server())
        # Playwright's sync API refuses a thread with a running asyncio loop (pytest-playwright's,
        # a notebook's): it gets a thread of its own.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            run = pool.submit(drive, server.url, plans, WARMUP_INTERACTIONS)
        try:
            times, errors, version = run.result()
        except Exception as e:
            raise RuntimeError(f"{e}\n--- panel serve log (tail) ---\n{server.log_tail()}") from e
        measured = machine(load_before)

    nodes, all_frames, all_doms, all_server = {}, [], [], []
    for node, (_initial, steps) in plans.items():
        steps = steps[WARMUP_INTERACTIONS:]
        frames, doms = [t["frame"] for t in times[node]], [t["dom"] for t in times[node]]
        server_ms = [s.server_ms for s in steps]
        nodes[node] = summary(frames, doms, server_ms)
        by_action: dict[str, list[int]] = {}
        for i, s in enumerate(steps):
            by_action.setdefault(s.action.name, []).append(i)
        nodes[node]["by_action"] = {
            name: summary([frames[i] for i in ix], [doms[i] for i in ix], [server_ms[i] for i in ix])
            for name, ix in by_action.items()}
        all_frames += frames
        all_doms += doms
        all_server += server_ms
    overall = summary(all_frames, all_doms, all_server)
    overall.update(target_p95_ms=TARGET_P95_MS, target_met=overall["p95_ms"] <= TARGET_P95_MS)
    results = {
        "nodes": nodes, "overall": overall,
        "machine": {**measured, "chromium": version}, "busy_processes": args.busy,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "interactions_per_node": args.interactions, "warmup_per_node": WARMUP_INTERACTIONS,
        "pause_between_s": PAUSE_S, "console_errors": errors,
    }
    print(report(results, args.interactions))
    if errors:
        common = ", ".join(f"{n}x {text!r}" for text, n in collections.Counter(errors).most_common(3))
        print(f"console errors in the page: {len(errors)} ({common})")
    if args.json:
        write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
