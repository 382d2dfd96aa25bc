"""The KV-cache lesson: `panel serve app.py` serves it at /app.

    /app                      the whole lesson (template, numbered navigation, all nodes)
    /app?node=paging          one node alone, no template chrome (for an iframe); also
                              fragmentation, radix, explain
    /app?node=radix&sharing=1 any node state in the URL (see kvviz/urlstate.py and kvviz/nodes/<node>/url.py)

Styles come from assets/kvviz.css, injected with `raw_css` so they also reach inside the
components' shadow roots; no static route is needed (assets/embed.html can be opened from disk
or served with `--static-dirs assets=./assets`).
"""

import contextlib

import panel as pn
import torch

from kvviz.lesson import Lesson, stylesheet, work_offline

# The engine runs one tiny model step per action: one thread is far faster than contending
# for a few shared cores.
torch.set_num_threads(1)

work_offline()
pn.extension(raw_css=[stylesheet()], throttled=True, notifications=False)

lesson = Lesson(pn.state.session_args)
doc = pn.state.curdoc
# Each root added to the document recomputes its whole model graph; the template adds a dozen
# roots. Frozen, the graph is computed once, when the page is complete.
with doc.models.freeze() if doc is not None else contextlib.nullcontext():
    if lesson.url.node:
        lesson.node_page(lesson.url.node).servable(title=f"Managing the KV cache · {lesson.url.node}")
    else:
        lesson.full_page().servable(title="Managing the KV cache")
