"""python -m kvviz.export OUT_DIR [--live-url URL]: write the lesson as static pages (see site.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from kvviz.export.recipes import recipes


def main(argv: list[str] | None = None, prog: str = "python -m kvviz.export") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("out", type=Path, help="the folder to write (created; its pages are overwritten)")
    parser.add_argument("--live-url", default=None,
                        help="where the live lesson runs, linked from the pages (e.g. https://example.edu:5006/app)")
    parser.add_argument("--only", action="append", choices=[*recipes(), "explain"], default=None,
                        help="write only this node's page (repeatable); default: every page and index.html")
    args = parser.parse_args(argv)
    if args.live_url is not None and not args.live_url.startswith(("http://", "https://")):
        parser.error("--live-url must start with http:// or https://")
    torch.set_num_threads(1)
    from kvviz.export.cache_folder import progress_line
    from kvviz.export.site import export

    def progress(what: str, done: int, total: int) -> None:
        print(progress_line({"what": what, "done": done, "total": total}), flush=True)

    for page in export(args.out, args.live_url, args.only, progress=progress):
        print(f"{page}  {page.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
