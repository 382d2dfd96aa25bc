"""The static export's pages in Chromium: size, and time from navigation to the player ready.

    python -m benchmarks.static_export [--site DIR] [--runs N] [--json PATH]

Exports the lesson into a temporary folder (or measures DIR, an existing export), opens each page
from disk with the network blocked, N times: its size, and the median and worst time until its
recordings are loaded and its default state drawn (issue 13: each page ≤ 5 MB, ready in ≤ 2 s).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import format_table, write_json
from tools.browser import CHROMIUM, CHROMIUM_ARGS


def ready_times(page_path: Path, nodes: list[str], runs: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(runs):
            context = browser.new_context()
            context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
            page = context.new_page()
            start = time.perf_counter()
            page.goto(page_path.as_uri())
            for key in nodes:
                page.wait_for_function(f"document.documentElement.dataset.kvReady{key.capitalize()} === '1'",
                                       timeout=60_000)
            page.locator(".kv-metric .kv-value").first.wait_for(timeout=60_000)
            out.append(time.perf_counter() - start)
            context.close()
        browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="an existing export (default: export one here)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    args = parser.parse_args(argv)
    from kvviz.export.recipes import recipes

    nodes = list(recipes())
    rows, data = [], []
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            from kvviz.export.site import export

            site, t = Path(tmp), time.perf_counter()
            export(site)
            print(f"exported in {time.perf_counter() - t:.0f} s")
        for name, waits in [*((f"{k}.html", [k]) for k in nodes), ("index.html", nodes)]:
            if (site / name).exists():
                times, size = ready_times(site / name, waits, args.runs), (site / name).stat().st_size
                rows.append([name, f"{size / 1e6:.2f}", f"{1000 * statistics.median(times):.0f}",
                             f"{1000 * max(times):.0f}"])
                data.append({"page": name, "bytes": size, "ready_s": times})
    print(format_table(["page", "MB", "ready p50 ms", "ready max ms"], rows))
    if args.json:
        write_json(args.json, {"pages": data})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
