"""What the played-lesson tests share (tests/ui/test_played.py, test_played_whole_lesson.py): a
metric card's value, the student's address opened with every node ready and what the page sends
after it, counted."""

from __future__ import annotations

LIVE_MS = 90_000  # (an answer of the server's engine: its first builds the node's views there)


def metric(page, label: str):
    return page.locator(f'.kv-metric[data-label="{label}"] .kv-value').first


def open_lesson(page, base: str, query: str = ""):
    """The student's address (/), redirected to the recorded lesson; every node registered.
    `traffic["requests"]`: every request after that, but the class's own channel, apart in
    `traffic["class"]`: the class state the page polls on a timer (pause, pace, follow me) and the
    roster's reports of where the page is (kvviz/export/classroom.js), which a scripted action
    does not send (checked in the first test)."""
    traffic = {"ws": [], "requests": [], "class": []}
    page.on("websocket", lambda ws: traffic["ws"].append(ws.url))
    page.goto(base + query)
    for key in ("Fragmentation", "Paging", "Radix"):
        page.wait_for_function(f"document.documentElement.dataset.kvReady{key} === '1'")

    def sent(request) -> None:
        channel = request.url.split("?")[0].endswith(("/lesson-class", "/lesson-report"))
        traffic["class" if channel else "requests"].append(request.url)
    page.on("request", sent)  # (after the page loaded)
    return traffic
