"""A live answer's compute, `python -m benchmarks.live_answer [N]`: N (12) distinct node-03 questions
asked of one `live.Service` after the node's recorded run, as benchmarks.classroom's typers ask them,
on one torch thread as the server runs (the recording made first where this code has none)."""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import time
from urllib.parse import urlencode


def main(argv: list[str] | None = None) -> float:
    import torch

    from benchmarks.classroom.clients import question
    from kvviz.export import cache, recipes
    from kvviz.serve.live import Service

    torch.set_num_threads(1)
    n = int((sys.argv[1:] if argv is None else argv or ["12"])[0])
    service = Service(cache.make(), recipes.recipes())
    after = json.loads(gzip.decompress(service.answer("node=radix&sharing=1")[1]))["steps"][-1]  # (warms)
    times = []
    for k in range(n):
        started = time.perf_counter()
        ask = {"node": "radix", "sharing": "1", "op": f"ask:{question(k + 40)}", "from": after}
        assert service.answer(urlencode(ask))[0] == 200
        times.append((time.perf_counter() - started) * 1000)
    print(f"{n} answers from step {after}, ms: {' '.join(f'{t:.0f}' for t in times)}; "
          f"median {statistics.median(times):.1f}")
    return statistics.median(times)


if __name__ == "__main__":
    main()
