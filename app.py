"""The KV-cache lesson: `panel serve app.py` serves it at /app.

    /app                      the whole lesson (template, numbered navigation, all nodes)
    /app?node=paging          one node alone, no template chrome (for an iframe); also
                              fragmentation, radix, explain
    /app?node=radix&sharing=1 any node state in the URL (see kvviz/urlstate.py and kvviz/nodes/<node>/url.py)

Styles come from assets/kvviz.css, served as a file by Panel itself (its /components/ route, for the
files that stylesheets.py lists: no --static-dirs needed) and linked into every component's shadow
root by URL: the browser fetches it once, where inlining it (`raw_css`) copied it into each of
~145 models of every page.
"""

import contextlib

import panel as pn
import torch
from bokeh.settings import settings

import stylesheets  # noqa: F401  (the class whose files Panel serves: the stylesheets)
from kvviz.export import cache_folder
from kvviz.lesson import STYLESHEET_URL, Lesson
from kvviz.process import memory, metrics, private_api
from kvviz.timeline import MEMO

# The engine runs one tiny model step per action: one thread is far faster than contending
# for a few shared cores.
torch.set_num_threads(1)

# Bokeh checks every new document's models for mistakes (10% of a page's server time); the
# pages are built by the same code each time and the tests run with the checks on.
settings.perform_document_validation.set_value(False)
# Bokeh computes a never-set property's constant default on every read; building a node reads
# them tens of thousands of times (kvviz/process/private_api.py: each computed once per class).
private_api.cache_bokeh_defaults()
# No web font (a classroom may have no internet): the page uses system fonts.
private_api.drop_web_fonts()
# A dropped connection (Wi-Fi) comes back to the same session while the server keeps it; the page
# says what is happening meanwhile (kvviz/web/connection.py).
pn.extension(throttled=True, notifications=False, reconnect=True)
pn.config.css_files = [STYLESHEET_URL]

metrics.install(MEMO)  # (counts for the class server's status page, the timeline memo's among them)
memory.tune_gc()  # (once per process: full collections stopped every session's clicks)
# (while the server makes the recorded lesson, the live page says how far it has got)
lesson = Lesson(pn.state.session_args, recording=cache_folder.recording_line)
metrics.track(lesson)
doc = pn.state.curdoc
# Each root added to the document recomputes its whole model graph; the template adds a dozen
# roots. Frozen, the graph is computed once, when the page is complete.
with doc.models.freeze() if doc is not None else contextlib.nullcontext():
    if lesson.url.node:
        lesson.node_page(lesson.url.node).servable(title=f"Managing the KV cache · {lesson.url.node}")
    else:
        lesson.full_page().servable(title="Managing the KV cache")
