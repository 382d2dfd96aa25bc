"""A class's pages wait on the server for the class state (kvviz/handin/class_endpoint.py: `?since=`
held until the state differs, at most HOLD_S): a teacher's command reaches a held page at once,
an unchanged class answers after the hold, and a page that goes away leaves nothing held."""

from __future__ import annotations

import asyncio
import json
import socket
import time

from async_support import run_async

from kvviz.handin import class_endpoint

NODES = ("fragmentation", "paging", "radix", "vllm", "explain")
KEY = "teacher words"


def serve_and(go):
    """Run `go(port, fetch)` against the class routes on a free loopback port."""
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.httpserver import HTTPServer
    from tornado.testing import bind_unused_port
    from tornado.web import Application

    async def main():
        sock, port = bind_unused_port()
        server = HTTPServer(Application([(r"/lesson-class", class_endpoint.ClassHandler, {"nodes": NODES})]))
        server.add_sockets([sock])
        client = AsyncHTTPClient(force_instance=True)

        async def fetch(path, method="GET", body=None, headers=None):
            return await client.fetch(HTTPRequest(f"http://127.0.0.1:{port}{path}", method=method, body=body,
                                                  headers=headers or {}, request_timeout=30),
                                      raise_error=False)
        try:
            return await go(port, fetch)
        finally:
            client.close()
            server.stop()

    return run_async(main())


def setup(monkeypatch, tmp_path, hold_s=20.0):
    monkeypatch.setenv("KVVIZ_DB", str(tmp_path / "class.db"))
    monkeypatch.setenv("KVVIZ_TEACHER_KEY", KEY)
    monkeypatch.setattr(class_endpoint, "HOLD_S", hold_s)
    class_endpoint.MEMO.forget()
    class_endpoint._ATTEMPTS.clear()


def test_a_command_reaches_a_held_page_at_once(monkeypatch, tmp_path):
    setup(monkeypatch, tmp_path)

    async def go(port, fetch):
        first = json.loads((await fetch("/lesson-class")).body)
        assert not first["paused"] and len(first["tag"]) == 16
        t0 = time.monotonic()
        held = asyncio.ensure_future(fetch(f"/lesson-class?since={first['tag']}"))
        await asyncio.sleep(0.5)
        assert not held.done() and len(class_endpoint.HELD) == 1  # (nothing changed: it waits)
        ok = await fetch("/lesson-class", "POST", b'{"command": "pause"}',
                         {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"})
        answer = await held
        return first, ok, answer, time.monotonic() - t0

    first, ok, answer, took = serve_and(go)
    assert ok.code == 200
    state = json.loads(answer.body)
    assert answer.code == 200 and state["paused"] is True and state["tag"] != first["tag"]
    assert took < 0.5 + 1.0  # (within a memo's read of the command, not at the hold's end)
    assert len(class_endpoint.HELD) == 0


def test_an_unchanged_class_answers_after_the_hold_and_another_tag_at_once(monkeypatch, tmp_path):
    setup(monkeypatch, tmp_path, hold_s=0.6)

    async def go(port, fetch):
        tag = json.loads((await fetch("/lesson-class")).body)["tag"]
        t0 = time.monotonic()
        same = await fetch(f"/lesson-class?since={tag}")
        held_s = time.monotonic() - t0
        t0 = time.monotonic()
        other = await fetch("/lesson-class?since=not-the-tag")
        return tag, same, held_s, other, time.monotonic() - t0

    tag, same, held_s, other, other_s = serve_and(go)
    assert same.code == 200 and json.loads(same.body)["tag"] == tag and held_s >= 0.6
    assert other.code == 200 and json.loads(other.body)["tag"] == tag and other_s < 0.5


def test_a_page_that_goes_away_leaves_nothing_held(monkeypatch, tmp_path):
    setup(monkeypatch, tmp_path)

    async def go(port, fetch):
        tag = json.loads((await fetch("/lesson-class")).body)["tag"]
        loop = asyncio.get_running_loop()
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(f"GET /lesson-class?since={tag} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        for _ in range(50):
            await asyncio.sleep(0.05)
            if len(class_endpoint.HELD) == 1:
                break
        was = len(class_endpoint.HELD)
        await loop.run_in_executor(None, sock.close)
        for _ in range(50):
            await asyncio.sleep(0.05)
            if len(class_endpoint.HELD) == 0:
                break
        return was, len(class_endpoint.HELD)

    assert serve_and(go) == (1, 0)


def test_a_tag_names_the_state_and_a_long_since_is_cut(monkeypatch, tmp_path):
    setup(monkeypatch, tmp_path)
    a = class_endpoint.tag({"paused": False, "pace": "", "follow": {"seq": 0, "node": "", "query": ""}})
    b = class_endpoint.tag({"paused": True, "pace": "", "follow": {"seq": 0, "node": "", "query": ""}})
    assert a != b and a == class_endpoint.status()["tag"]

    async def go(port, fetch):
        t0 = time.monotonic()
        r = await fetch("/lesson-class?since=" + "a" * 5000)
        return r, time.monotonic() - t0

    r, took = serve_and(go)
    assert r.code == 200 and took < 0.5  # (cut to 64 characters: no tag, answered at once)
