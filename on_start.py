"""Panel's `--setup` script for a server of the lesson (`panel serve app.py teacher.py --plugins
kvviz.serve.routes --setup on_start.py`, as `kvviz lesson` and `make class` run it): the recorded
lesson begins at the server's start, not at its first request (kvviz/serve/routes.py `start`).
With --num-procs, Panel runs it in each process."""

import sys
from pathlib import Path

# (run by Panel before it runs the apps, which put their folder on sys.path: this one does it first,
# so that `panel serve` finds the lesson's package from a plain console script too)
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from kvviz.serve import routes  # noqa: E402

routes.start()
