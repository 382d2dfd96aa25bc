"""The teacher's page: `panel serve app.py teacher.py` serves it at /teacher, next to the lesson.

Locked by the teacher's passphrase (KVVIZ_TEACHER_KEY, else generated once and stored with the
hand-ins; `make lesson` and `make class` print it). It reads the class database (KVVIZ_DB,
default ./kvviz-class.db) that every server process writes students' hand-ins into, so with
several server processes it still sees the whole class. See kvviz/handin/.
"""

import panel as pn

import stylesheets  # noqa: F401  (the class whose files Panel serves: the stylesheets)
from kvviz.handin.teacher_view import TeacherPage
from kvviz.handin.view import CSS_URL
from kvviz.lesson import NODE_PAGE_TEMPLATE
from kvviz.nodes import OUTLINE

pn.extension(notifications=False)
pn.config.css_files = [CSS_URL]

TeacherPage(outline=OUTLINE).servable(title="Your class · Managing the KV cache")
if pn.state.curdoc is not None:  # (the page as a phone lays it out, its content the main landmark)
    pn.state.curdoc.template = NODE_PAGE_TEMPLATE
