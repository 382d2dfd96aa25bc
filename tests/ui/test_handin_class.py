"""Forty students hand in at the same moment, through two server processes that share the class
database, over the same websocket protocol a browser speaks (benchmarks/classroom_protocol.py):
none is lost, and the teacher page on one process shows those handed in through the other.

Each student GETs /app?node=explain, opens its websocket and pulls the document; once all forty
are ready, each sends what a browser would (its student id from localStorage, its name typed,
the Hand in click) and waits for the confirmation.
"""

from __future__ import annotations

import asyncio
import secrets
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect

from benchmarks import classroom_protocol as bp
from kvviz.handin.storage import Store
from tools.browser import Server

pytestmark = [pytest.mark.ui, pytest.mark.slow]

STUDENTS = 40
TIMEOUT_S = 300


class Student:
    def __init__(self, url: str, name: str):
        self.url, self.name, self.student_id = url, name, secrets.token_hex(16)
        u = urllib.parse.urlsplit(url)
        self.origin = f"{u.scheme}://{u.netloc}"
        self.ws_url = f"ws://{u.netloc}{u.path}/ws?{u.query}"
        self.assembler = bp.Assembler()

    async def _next(self) -> bp.Message:
        while True:
            message = self.assembler.feed(await self.ws.recv())
            if message is not None:
                return message

    async def open(self) -> None:
        import websockets

        page = await asyncio.to_thread(lambda: urllib.request.urlopen(self.url, timeout=TIMEOUT_S).read().decode())
        token, _session = bp.session_token(page)
        self.ws = await websockets.connect(self.ws_url, origin=self.origin, subprotocols=["bokeh", token],
                                           max_size=None, ping_interval=None, open_timeout=TIMEOUT_S)
        assert (await self._next()).msgtype == "ACK"
        _id, frames = bp.pull_doc_req()
        for f in frames:
            await self.ws.send(f)
        reply = await self._next()
        while reply.msgtype != "PULL-DOC-REPLY":
            reply = await self._next()
        doc = bp.DocIndex(reply.json()["doc"])
        models = doc.models.items()
        (self.id_model,) = [m["attributes"]["data"]["id"] for _i, m in models
                            if "kvviz-student-id" in str(m["attributes"].get("esm", ""))]
        (self.name_box,) = [i for i, m in models if str(m["attributes"].get("title", "")).startswith("Your name")]
        (self.button,) = [i for i, m in models if m["attributes"].get("label") == "Hand in to the teacher"]

    async def hand_in(self) -> str:
        """What a browser sends; returns the confirmation's text."""
        for events in ([bp.document_ready(), bp.model_changed(self.id_model, "student_id", self.student_id),
                        bp.model_changed(self.name_box, "value_input", self.name),
                        bp.model_changed(self.name_box, "value", self.name)],
                       [bp.button_click(self.button)]):
            _id, frames = bp.patch_doc(events)
            for f in frames:
                await self.ws.send(f)
        while True:
            message = await self._next()
            if message.msgtype == "PATCH-DOC" and "kv-h-status" in message.content:
                for event in message.json()["events"]:
                    text = str(event.get("new", ""))
                    if "Handed in" in text or "kv-h-error" in text:
                        await self.ws.close()
                        return text


async def hand_in_together(students: list[Student]) -> list[str]:
    await asyncio.gather(*(s.open() for s in students))  # all ready first ...
    return await asyncio.wait_for(asyncio.gather(*(s.hand_in() for s in students)), TIMEOUT_S)  # ... then at once


def test_forty_students_hand_in_at_once_through_two_processes_and_none_is_lost(page, served):
    tag = secrets.token_hex(3)
    with Server(apps=("app.py", "teacher.py"), env={"KVVIZ_DB": str(served.db),
                                                      "KVVIZ_TEACHER_KEY": served.teacher_key}) as other:
        students = [Student(f"{(served if i % 2 else other).url}?node=explain", f"Student {i:02d} {tag}")
                    for i in range(STUDENTS)]
        with ThreadPoolExecutor(1) as pool:  # (Playwright's sync API holds this thread's event loop)
            said = pool.submit(asyncio.run, hand_in_together(students)).result()
    assert all("Handed in" in s for s in said), [s for s in said if "Handed in" not in s][:3]
    mine = {h.name: h for h in Store(served.db).handins() if h.name.endswith(tag)}
    assert sorted(mine) == sorted(s.name for s in students)
    assert {mine[s.name].student_id for s in students} == {s.student_id for s in students}
    assert all(h.submissions == 1 for h in mine.values())
    # The teacher, on the first process, sees those handed in through the other one too.
    page.goto(served.base + "teacher")
    page.get_by_label("Teacher passphrase").fill(served.teacher_key)
    page.get_by_role("button", name="Open the class").click()
    page.get_by_label("Search by name").fill(tag)
    expect(page.locator(".kv-t-handin")).to_have_count(STUDENTS)
    expect(page.locator(".kv-t-count")).to_contain_text(f"{STUDENTS} shown")
