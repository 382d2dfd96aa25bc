"""Parameter references: how a figure is told which state parameter it draws.

A figure is given `state.param.<name>` (a `param.Parameter` bound to its owner), never the
parameter's name as a string: `value(ref)` reads it now, `watch(ref, fn)` calls `fn` on change.
"""

from __future__ import annotations

import param


def Ref(doc: str = "") -> param.ClassSelector:  # noqa: N802 (a parameter declaration, like param's)
    """Declare a parameter that holds a parameter reference, e.g. `snapshot = Ref("the pool")`."""
    return param.ClassSelector(class_=param.Parameter, allow_refs=False, doc=doc)


def value(ref: param.Parameter):
    """The referenced parameter's current value."""
    return getattr(ref.owner, ref.name)


def watch(ref: param.Parameter, fn, *more: param.Parameter) -> None:
    """Call `fn(*events)` whenever `ref` (or one of `more`, of the same owner) changes."""
    names = [ref.name, *(m.name for m in more)]
    if any(m.owner is not ref.owner for m in more):
        raise ValueError("watch() takes parameters of one owner")
    ref.owner.param.watch(fn, names)
