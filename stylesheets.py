"""The lesson's stylesheets, served by Panel itself: `panel serve app.py` needs no other flag.

Panel serves, at `/components/<module>/<class>/__css__/<path>`, each file that a class lists in
its `__css__`, found relative to that class's module (panel.io.server.ComponentResourceHandler);
nothing else is reachable there. This module sits beside `app.py`, `teacher.py` and `assets/`, so
the stylesheets stay in `assets/`. Their URLs (`kvviz/web/stylesheet.py`, relative to the page,
with their content's hash so a browser never keeps an old copy) are linked into the page and into
every component's shadow root (`pn.config.css_files`): the browser fetches each once.
"""

from kvviz.web.stylesheet import ROUTE, STYLESHEETS

assert f"components/{__name__}/Stylesheets/__css__/" == ROUTE, ROUTE  # (the route names this module)


class Stylesheets:
    __css__ = list(STYLESHEETS)
