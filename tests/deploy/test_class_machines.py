"""A class over several machines (deploy/class_machines.py, used by `make class UPSTREAM=...`):
the command each extra machine runs, pointing at the shared store, and the check that each
upstream backend answers, against small HTTP servers on 127.0.0.2 standing in for another
machine. No nginx, no Panel."""

from __future__ import annotations

import http.server
import shlex
import socket
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy"))
import class_backends  # noqa: E402
import class_machines as machines  # noqa: E402  (deploy/ is scripts, not a package)
import class_server  # noqa: E402

sys.path.pop(0)

DB = "postgresql://kvviz:s3cret@localhost:5432/class"


def test_each_extra_machine_gets_one_command_for_its_backends_pointing_at_the_shared_store():
    got = machines.commands(["10.0.0.21:5100", "10.0.0.21:5101", "10.0.0.22:5200", "10.0.0.22:5300"], DB,
                            "10.0.0.20", ["*"])
    assert [host for host, _ in got] == ["10.0.0.21", "10.0.0.22", "10.0.0.22"]
    env, trusted, *make = shlex.split(got[0][1])
    assert env == "KVVIZ_DB=postgresql://kvviz:s3cret@10.0.0.20:5432/class"  # localhost: this machine, there
    # their backends believe the address this machine's nginx names for a student, from this machine
    assert trusted == "KVVIZ_TRUSTED_PROXIES=10.0.0.20"
    assert make == ["make", "backends", "BACKENDS=2", "BASE_PORT=5100", "ALLOW=*"]
    assert [shlex.split(c)[4:6] for _, c in got[1:]] == [["BACKENDS=1", "BASE_PORT=5200"],
                                                         ["BACKENDS=1", "BASE_PORT=5300"]]  # not consecutive
    remote = "postgresql://kvviz:s3cret@db.school:5432/class"
    assert (shlex.split(machines.commands(["h:1"], remote, "10.0.0.20", ["a:1", "b:2"])[0][1])[0]
            == f"KVVIZ_DB={remote}")
    assert "ALLOW='a:1 b:2'" in machines.commands(["h:1"], remote, "10.0.0.20", ["a:1", "b:2"])[0][1]


def test_a_file_store_is_not_passed_to_other_machines_and_a_password_is_never_shown(tmp_path):
    (_, cmd), = machines.commands(["h:5100"], tmp_path / "kvviz-class.db", "10.0.0.20", ["*"])
    assert "KVVIZ_DB" not in cmd
    assert machines.shown(DB) == "postgresql://kvviz:***@localhost:5432/class"
    assert machines.shown(tmp_path / "x.db") == str(tmp_path / "x.db")
    assert class_backends.class_db({"KVVIZ_DB": f" {DB} "}) == DB  # a URL goes to the backends as given
    assert class_backends.class_db({"KVVIZ_DB": "x.db"}) == Path("x.db").resolve()


@pytest.mark.parametrize("bad", ["10.0.0.21", "10.0.0.21:", ":5100", "10.0.0.21:http", "10.0.0.21:70000"])
def test_an_upstream_that_is_not_host_port_is_refused_with_a_sentence(bad):
    with pytest.raises(ValueError, match="HOST:PORT"):
        machines.split_hostport(bad)
    with pytest.raises(SystemExit, match="HOST:PORT"):
        class_server.ClassServer(class_server.parse_args(["--upstream", bad, "--backends", "1"])).check()


class _App(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200 if self.path == "/app" else 404)
        self.end_headers()
        self.wfile.write(b"a page")

    def log_message(self, *args):
        pass


@pytest.fixture
def other_machine():
    """A backend on 127.0.0.2 that serves /app, and a port there where nothing listens."""
    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), _App)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        dead = s.getsockname()[1]
    yield f"127.0.0.2:{server.server_address[1]}", f"127.0.0.2:{dead}"
    server.shutdown()
    server.server_close()


def test_the_check_says_which_upstreams_answer_and_which_do_not(other_machine):
    up, dead = other_machine
    said: list[str] = []
    result = machines.wait_for([up, dead], seconds=1, say=said.append, every_s=0.2)
    assert result[up] is None and "refused" in result[dead].lower()
    assert f"    {up} answers" in said and not [line for line in said if dead in line and "answers" in line]
