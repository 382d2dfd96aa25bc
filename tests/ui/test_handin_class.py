"""Forty students hand in at the same moment, through two server processes that share the class
database, over the same websocket protocol a browser speaks (tests/bokeh_protocol_support.py):
none is lost, and the teacher page on one process shows those handed in through the other.

Each student GETs /app?node=explain, opens its websocket and pulls the document; once all forty
are ready, each sends what a browser would (its student id from localStorage, its name typed,
the Hand in click) and waits for the confirmation.
"""

from __future__ import annotations

import asyncio
import secrets
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import bokeh_protocol_support as bp
import pytest
from playwright.sync_api import expect

from kvviz.handin.storage import Store
from tools.browser import Server

pytestmark = [pytest.mark.ui, pytest.mark.slow]

STUDENTS = 40
TIMEOUT_S = 300


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
        return r.read().decode()


class Student:
    def __init__(self, url: str, name: str):
        self.url, self.name, self.student_id = url, name, secrets.token_hex(16)
        self.page = bp.Page(url)

    async def open(self) -> None:
        doc = await self.page.open(await asyncio.to_thread(get, self.url), timeout=TIMEOUT_S)
        models = doc.models.items()
        (self.id_model,) = [m["attributes"]["data"]["id"] for _i, m in models
                            if "kvviz-student-id" in str(m["attributes"].get("esm", ""))]
        (self.name_box,) = [i for i, m in models
                            if str(m["attributes"].get("title", "")).startswith("Your name")]
        (self.button,) = [i for i, m in models if m["attributes"].get("label") == "Hand in to the teacher"]

    async def hand_in(self) -> str:
        """What a browser sends; returns the confirmation's text."""
        for events in ([bp.document_ready(), bp.model_changed(self.id_model, "student_id", self.student_id),
                        bp.model_changed(self.name_box, "value_input", self.name),
                        bp.model_changed(self.name_box, "value", self.name)],
                       [bp.button_click(self.button)]):
            await self.page.send(events)
        while True:
            message = await self.page.next()
            if message.msgtype == "PATCH-DOC" and "kv-h-status" in message.content:
                for event in message.json()["events"]:
                    text = str(event.get("new", ""))
                    if "Handed in" in text or "kv-h-error" in text:
                        await self.page.close()
                        return text


async def hand_in_together(students: list[Student]) -> list[str]:
    await asyncio.gather(*(s.open() for s in students))  # all ready first ...
    # ... then at once
    return await asyncio.wait_for(asyncio.gather(*(s.hand_in() for s in students)), TIMEOUT_S)


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
