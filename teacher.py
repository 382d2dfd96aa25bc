"""The teacher's page: `panel serve app.py teacher.py` serves it at /teacher, next to the lesson.

Locked by the teacher's passphrase (KVVIZ_TEACHER_KEY, else generated once and stored with the
hand-ins; `make lesson` and `make class` print it). It reads the class database (KVVIZ_DB,
default ./kvviz-class.db) that every server process writes students' hand-ins into, so with
several server processes it still sees the whole class. See kvviz/handin/.
"""

import os

import panel as pn

import stylesheets  # noqa: F401  (the class whose files Panel serves: the stylesheets)
from kvviz.handin.teacher_view import TeacherPage
from kvviz.handin.view import CSS_URL
from kvviz.lesson import NODE_PAGE_TEMPLATE
from kvviz.nodes import OUTLINE
from kvviz.nodes.radix.class_view import ONE_SERVER, ClassTreeView

pn.extension(notifications=False)
pn.config.css_files = [CSS_URL]

# (with several backends, `make class`, each holds the questions its own students typed)
BACKENDS_NOTE = ("With several servers (make class), these are the questions answered by the one this page "
                 "reached; each question goes to the least busy server." if os.environ.get("KVVIZ_BACKENDS")
                 else ONE_SERVER)
TeacherPage(outline=OUTLINE, projector=[lambda: ClassTreeView(backends_note=BACKENDS_NOTE)]).servable(
    title="Your class · Managing the KV cache")
if pn.state.curdoc is not None:  # (the page as a phone lays it out, its content the main landmark)
    pn.state.curdoc.template = NODE_PAGE_TEMPLATE
