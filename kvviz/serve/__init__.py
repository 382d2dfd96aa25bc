"""What serves the recorded lesson: `panel serve app.py teacher.py --plugins kvviz.serve.routes`.

routes.py is the Panel plugin (/, /lesson/..., /lesson-status, /lesson-live, /lesson-handin,
/lesson-report, /lesson-class); live.py answers what no recording holds, on this process's
engine. Both read what a page and a live answer share from kvviz/export/ (page_models.py,
record.py's reader, recipes.py, cache_folder.py) and never import what writes the pages
(site.py, page.py, walk.py, player.py, checks.py, standalone.py) nor what makes the served recording
(cache.py: started as its own command, `python -m kvviz.export.cache`, in a child process).
pyproject.toml's import contracts hold it so (docs/architecture.md, "Layers").
"""
