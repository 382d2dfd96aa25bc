"""While the server makes the recorded lesson (its first start), the live page it serves
meanwhile says how far it has got, reads it again, and drops the line once the recording is
ready; the line is text (kvviz/export/cache_folder.py `recording_line`, kvviz/lesson.py)."""

from __future__ import annotations

from kvviz.export import cache, cache_folder
from kvviz.lesson import Lesson, recording_html


def test_the_line_follows_the_recording_file_and_is_gone_when_it_is_ready(tmp_path):
    assert cache_folder.recording_line(tmp_path, "abc") is None  # (nothing being made: nothing said)
    cache.write_progress(tmp_path, "abc", {"what": "node 02 · PagedAttention", "done": 2, "total": 8})
    line = cache_folder.recording_line(tmp_path, "abc")
    assert "recording node 02 · PagedAttention… 25% (part 3 of 8)" in line and "live" in line
    (tmp_path / "abc").mkdir()
    (tmp_path / "abc" / "index.html").write_text("<html></html>")
    assert cache_folder.recording_line(tmp_path, "abc") is None


def test_the_live_page_shows_the_line_and_drops_it_when_the_recording_is_ready():
    said = iter(["recording the nodes' states… 40% (part 5 of 12)", "recording the whole lesson's page… 90%",
                 None])
    lesson = Lesson({}, recording=lambda: next(said))
    pane = lesson._notice_pane()
    assert "40%" in lesson.progress.object and lesson.progress in pane
    lesson.refresh_progress()
    assert "90%" in lesson.progress.object and lesson._progress_timer.running
    lesson.refresh_progress()
    assert lesson.progress.object == "" and not lesson._progress_timer.running


def test_without_a_recording_in_progress_the_page_has_no_line():
    lesson = Lesson({}, recording=lambda: None)
    lesson._notice_pane()
    assert not hasattr(lesson, "progress")


def test_the_line_is_text():
    assert recording_html("<img src=x onerror=alert(1)> 5%") == \
        '<p class="kv-recording-progress" role="status">&lt;img src=x onerror=alert(1)&gt; 5%</p>'
    assert recording_html(None) == ""


def test_progress_told_from_two_threads_at_once_is_always_written_whole(tmp_path):
    """A recording tells its progress from the thread that waits for the walks and from the one
    that writes the pages (kvviz/export/site.py): neither write may find the other's part file."""
    import json
    import threading

    errors: list[BaseException] = []

    def tell(who: str) -> None:
        try:
            for n in range(300):
                cache.write_progress(tmp_path, "k", {"what": who, "done": n, "total": 300})
        except BaseException as e:  # (the old shared part name: FileNotFoundError)
            errors.append(e)

    threads = [threading.Thread(target=tell, args=(who,)) for who in ("walks", "pages")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    said = json.loads(cache_folder.progress_path(tmp_path, "k").read_text(encoding="utf-8"))
    assert said["what"] in ("walks", "pages") and said["total"] == 300
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache_folder.progress_path(tmp_path, "k").name]
