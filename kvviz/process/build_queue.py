"""Lazy sections built one part at a time per process, with the event loop free in between.

A served process has one event loop for all its sessions. Building a node section takes a
tenth to a third of a second of that loop (its Python objects, then its Bokeh models and the
message that sends them); when a class scrolls to the same node together, twenty builds ran
back to back and every click in the process waited behind all of them (a click's p95 went
past two seconds in the class benchmark's live `/app` mode, since dropped: docs/benchmarks.md).

Here a section's build is a generator of parts (`LazySlot` has two: make the view, then swap it
in). The process runs one part at a time, first come first served across sessions, each under
its session's document lock (as any Bokeh callback), and between two parts gives the loop to
whatever is waiting until the loop has been quiet for a few milliseconds (`breathe`): a click,
a Play tick or a new page runs before the next part. A click is several steps of the loop (each
of its messages is read only when the one before was handled and answered), so a fixed short
pause was not enough: with 15 ms between parts a click's p95 was still 2.6 s. A click now waits
for at most one part. A session that is gone by its turn is skipped.

Outside a served session (tests, a notebook, the static export) nothing is queued: the caller
builds at once.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
from collections.abc import Iterator

from bokeh.document import Document
from panel.io.state import set_curdoc

log = logging.getLogger("kvviz.build_queue")
# Between two parts the loop runs whatever is waiting (a click is several steps: its messages are
# read one after another, each under its session's lock, then written back) until it has been
# quiet for QUIET_S, or for at most MAX_GAP_S when it never is.
TICK_S = 0.001
QUIET_S = 0.006
MAX_GAP_S = 0.4


def served(doc: Document | None) -> bool:
    """Whether `doc` is a live served session's document (the only kind that is queued)."""
    ctx = doc.session_context if doc is not None else None
    return ctx is not None and getattr(ctx, "session", None) is not None and not ctx.destroyed


async def breathe() -> float:
    """Let the event loop run what is waiting until it has been quiet for QUIET_S (each short
    sleep came back on time: nothing else ran), or MAX_GAP_S passed; returns the seconds given."""
    loop = asyncio.get_running_loop()
    start = quiet_since = loop.time()
    while True:
        before = loop.time()
        await asyncio.sleep(TICK_S)
        now = loop.time()
        if now - before > 2 * TICK_S + 0.001:  # something else ran meanwhile
            quiet_since = now
        if now - quiet_since >= QUIET_S or now - start >= MAX_GAP_S:
            return now - start


class BuildQueue:
    """The process's parts to run, one at a time, in order of arrival."""

    def __init__(self) -> None:
        self._jobs: collections.deque[tuple[Document, Iterator[None]]] = collections.deque()
        self._draining = False

    def __len__(self) -> int:
        return len(self._jobs)

    def submit(self, doc: Document, parts: Iterator[None]) -> None:
        """Run `parts` (each `next()` one part) for `doc`'s session, after the jobs before it."""
        self._jobs.append((doc, parts))
        if not self._draining:
            self._draining = True
            asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._jobs:
                await breathe()
                doc, parts = self._jobs[0]
                finished = [True]
                if served(doc):
                    try:
                        await doc.session_context.with_locked_document(
                            functools.partial(self._part, parts=parts, finished=finished))
                    except Exception:  # (the session went away while waiting for its lock)
                        log.exception("a section's session")
                if finished[0]:
                    self._jobs.popleft()
        finally:
            self._draining = False

    @staticmethod
    def _part(doc: Document, parts: Iterator[None], finished: list[bool]) -> None:
        """One part, as the session's own callback; `finished[0]` says whether the job has no
        parts left."""
        with set_curdoc(doc):
            try:
                next(parts)
                finished[0] = False
            except StopIteration:
                finished[0] = True
            except Exception:  # one broken section must not stop every other student's
                log.exception("building a section")
                finished[0] = True


QUEUE = BuildQueue()
