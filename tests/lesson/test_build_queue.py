"""The process's build queue (kvviz/process/build_queue.py): lazy sections built one part at a time,
in order of arrival, each under its session's lock, with the event loop free in between."""

from __future__ import annotations

import asyncio
import time

import panel as pn
from async_support import run_async as arun
from bokeh.document import Document

from kvviz.process import build_queue
from kvviz.process.build_queue import BuildQueue


class FakeSession:
    """What the queue uses of a served session: its lock (one callback at a time), `destroyed`."""

    def __init__(self, log: list, name: str):
        self.log, self.name, self.destroyed = log, name, False
        self._lock = asyncio.Lock()

    async def with_document_locked(self, func, doc):
        async with self._lock:
            self.log.append(f"{self.name} locked")
            return func(doc)


class FakeContext:
    def __init__(self, session: FakeSession):
        self.session = session

    @property
    def destroyed(self) -> bool:
        return self.session.destroyed

    async def with_locked_document(self, func):
        await self.session.with_document_locked(func, self._document)


def served_doc(log: list, name: str) -> Document:
    doc = Document()
    ctx = FakeContext(FakeSession(log, name))
    ctx._document = doc
    doc._session_context = lambda: ctx  # (how Bokeh keeps it: a weak reference)
    return doc


def job(log: list, name: str, parts: int, fail_at: int | None = None):
    for i in range(parts):
        assert pn.state.curdoc is not None and pn.state.curdoc.session_context.session.name == name
        if i == fail_at:
            raise RuntimeError("a broken section")
        log.append(f"{name} part {i}")
        if i < parts - 1:
            yield


def run(queue: BuildQueue, jobs: list) -> None:
    async def go():
        for doc, parts in jobs:
            queue.submit(doc, parts)
        while len(queue):
            await asyncio.sleep(0.005)
    arun(go())


def test_parts_run_one_at_a_time_in_order_of_arrival_each_under_its_sessions_lock():
    log: list = []
    a, b = served_doc(log, "a"), served_doc(log, "b")
    run(BuildQueue(), [(a, job(log, "a", 2)), (b, job(log, "b", 3))])
    assert log == ["a locked", "a part 0", "a locked", "a part 1",
                   "b locked", "b part 0", "b locked", "b part 1", "b locked", "b part 2"]


def busy_steps(log: list, steps: int, label: str = "click"):
    """A click's work as the loop sees it: several short steps (read, handle, write back)."""
    async def go():
        for _ in range(steps):
            time.sleep(0.003)
            log.append(label)
            await asyncio.sleep(0)
    return go()


def test_a_part_waits_until_the_loop_has_run_what_was_waiting():
    log: list = []
    doc = served_doc(log, "a")

    async def go():
        queue = BuildQueue()
        click = asyncio.get_running_loop().create_task(busy_steps(log, 20))
        queue.submit(doc, job(log, "a", 2))
        await click
        while len(queue):
            await asyncio.sleep(0.005)
    arun(go())
    first_part = log.index("a part 0")
    assert log.count("click") == 20 and "click" not in log[first_part:]


def test_a_loop_that_is_never_quiet_still_gets_its_parts_after_the_longest_gap(monkeypatch):
    monkeypatch.setattr(build_queue, "MAX_GAP_S", 0.05)
    log: list = []

    async def go():
        endless = asyncio.get_running_loop().create_task(busy_steps(log, 10_000))
        given = await build_queue.breathe()
        endless.cancel()
        return given
    given = arun(go())
    assert 0.05 <= given < 0.2 and log.count("click") > 5


def test_a_gone_session_is_skipped_and_a_broken_section_stops_only_itself():
    log: list = []
    gone, broken, fine = served_doc(log, "gone"), served_doc(log, "broken"), served_doc(log, "fine")
    gone.session_context.session.destroyed = True
    run(BuildQueue(), [(gone, job(log, "gone", 2)), (broken, job(log, "broken", 3, fail_at=1)),
                       (fine, job(log, "fine", 1))])
    assert [e for e in log if "part" in e] == ["broken part 0", "fine part 0"]


def test_outside_a_served_session_a_section_is_built_at_once():
    from kvviz.lesson import Lesson

    lesson = Lesson({})
    lesson.full_page()
    assert not build_queue.served(Document()) and not build_queue.served(None)
    lesson.slot("paging").reveal()
    assert lesson.slot("paging").built and not len(build_queue.QUEUE)
