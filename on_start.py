"""Panel's `--setup` script for a server of the lesson (`panel serve app.py teacher.py --plugins
kvviz.export.routes --setup on_start.py`, as `kvviz lesson` and `make class` run it): the recorded
lesson begins at the server's start, not at its first request (kvviz/export/routes.py `start`).
With --num-procs, Panel runs it in each process."""

from kvviz.export import routes

routes.start()
