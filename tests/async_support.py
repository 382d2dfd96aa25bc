"""Running a coroutine, or a small Tornado server of some routes, from a plain test.

Under pytest-xdist a worker may have run Playwright's sync tests first: its main thread then
already has a running event loop, and `asyncio.run` (or Tornado's AsyncHTTPTestCase) fails there.
So every coroutine runs on a thread of its own."""

from __future__ import annotations

import asyncio
import concurrent.futures


def run_async(coro):
    """Run a coroutine to the end on a thread of its own; returns its result."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def fetch_all(routes: list, requests: list[tuple]) -> list:
    """Serve `routes` (a Tornado application's) on a free loopback port and send each request in
    turn: (method, path, headers[, body]). Returns the responses (errors and redirects included: not
    raised, not followed)."""
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.httpserver import HTTPServer
    from tornado.testing import bind_unused_port
    from tornado.web import Application

    async def go():
        sock, port = bind_unused_port()
        server = HTTPServer(Application(routes))
        server.add_sockets([sock])
        client = AsyncHTTPClient(force_instance=True)
        out = []
        try:
            for method, path, headers, *rest in requests:
                body = rest[0] if rest else (b"{}" if method == "POST" else None)
                out.append(await client.fetch(HTTPRequest(f"http://127.0.0.1:{port}{path}", method=method,
                                                          body=body, headers=headers, follow_redirects=False),
                                              raise_error=False))
        finally:
            client.close()
            server.stop()
        return out

    return run_async(go())
