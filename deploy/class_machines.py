"""The extra machines of a class (`make class UPSTREAM=...`): the command each one runs, and
whether each of their backends answers before the students arrive. Used by class_server.py.

    commands(upstreams, db, front_host, allow)   # one `make backends ...` line per extra machine
    wait_for(upstreams, seconds, say)            # the upstreams that answered GET /app in time
    announce(upstreams, db, front_host, allow, wait_s)  # both, printed, at the class server's start
    announce_backends(address, hosts, ports, fail_timeout_s, db)  # on an extra machine: its lines

The extra machines run backends only, pointing at the same store as this one: KVVIZ_DB, a
postgresql:// URL (a host of localhost or 127.x there means this machine, so the command names
this machine's address instead); and trusting this machine's nginx to name each student's address
(KVVIZ_TRUSTED_PROXIES: else every student there counts as this one machine, against one limit). A SQLite file
cannot be shared between machines: then the command is still printed, with a warning that hand-ins made there
stay there.

Standard library only, like class_server.py.
"""

from __future__ import annotations

import shlex
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

LOOPBACK = ("localhost", "127.", "::1", "[::1]")


def split_hostport(upstream: str) -> tuple[str, int]:
    """'HOST:PORT' (or '[v6]:PORT') as (host, port); ValueError with a sentence otherwise."""
    host, sep, port = upstream.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"UPSTREAM {upstream!r} is not HOST:PORT (e.g. 192.168.1.21:5100)")
    return host, int(port)


def is_url(db: str | Path) -> bool:
    return "://" in str(db)


def shown(db: str | Path) -> str:
    """The database to print or to write in a state file: a URL's password hidden."""
    if not is_url(db):
        return str(db)
    parts = urllib.parse.urlsplit(str(db))
    if parts.password is None:
        return str(db)
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def for_other_machines(db: str, front_host: str) -> str:
    """`db` as another machine reaches it: a loopback host becomes this machine's address."""
    parts = urllib.parse.urlsplit(db)
    if not (parts.hostname or "localhost").startswith(LOOPBACK):
        return db
    userinfo, _, hostport = parts.netloc.rpartition("@")
    port = f":{parts.port}" if parts.port else ""
    netloc = f"{userinfo}@{front_host}{port}" if userinfo else f"{front_host}{port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def commands(upstreams: list[str], db: str | Path, front_host: str,
             allow: list[str]) -> list[tuple[str, str]]:
    """(host, the command that host runs in its kvviz checkout), one per extra machine; backends
    on ports that do not follow each other get one command each."""
    by_host: dict[str, list[int]] = {}
    for u in upstreams:
        host, port = split_hostport(u)
        by_host.setdefault(host, []).append(port)
    env = f"KVVIZ_DB={shlex.quote(for_other_machines(str(db), front_host))} " if is_url(db) else ""
    # (their backends count each student by the address this machine's nginx names, which they
    # believe from this machine only: kvviz/process/throttle.py)
    env += f"KVVIZ_TRUSTED_PROXIES={shlex.quote(front_host)} "
    origins = shlex.quote(" ".join(allow))
    out = []
    for host, ports in by_host.items():
        ports = sorted(set(ports))
        runs = [ports] if ports == list(range(ports[0], ports[0] + len(ports))) else [[p] for p in ports]
        for run in runs:
            out.append((host, f"{env}make backends BACKENDS={len(run)} BASE_PORT={run[0]} ALLOW={origins}"))
    return out


def answers(upstream: str, timeout_s: float = 60) -> str | None:
    """None when the backend at `upstream` serves /app (HTTP 200), else why not."""
    host, port = split_hostport(upstream)
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/app", timeout=timeout_s) as r:
            r.read()
            return None if r.status == 200 else f"HTTP {r.status}"
    except (OSError, urllib.error.URLError) as e:
        return str(getattr(e, "reason", e))


def wait_for(upstreams: list[str], seconds: float, say: Callable[[str], None], every_s: float = 2.0,
             stop: Callable[[], bool] = lambda: False) -> dict[str, str | None]:
    """Ask each upstream for /app until it answers or `seconds` have passed; says each one that
    answers, and every 30 s those still waited for. {upstream: None if it answered, else why not}."""
    result: dict[str, str | None] = {u: "not asked" for u in upstreams}
    deadline = time.monotonic() + seconds
    next_note = time.monotonic() + 30
    lock = threading.Lock()
    while True:
        pending = [u for u, why in result.items() if why is not None]

        def ask(u: str) -> None:
            why = answers(u, timeout_s=max(1.0, min(60.0, deadline - time.monotonic())))
            with lock:
                result[u] = why
            if why is None:
                say(f"    {u} answers")

        threads = [threading.Thread(target=ask, args=(u,), daemon=True) for u in pending]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pending = [u for u, why in result.items() if why is not None]
        if not pending or time.monotonic() >= deadline or stop():
            return result
        if time.monotonic() >= next_note:
            next_note = time.monotonic() + 30
            say(f"    still waiting for {' '.join(pending)} (run the command above there)")
        time.sleep(every_s)


def announce(upstreams: list[str], db: str | Path, front_host: str, allow: list[str], wait_s: float,
             stop: Callable[[], bool] = lambda: False) -> None:
    """Print the command each extra machine runs, then wait (up to `wait_s`, --upstream-wait) for
    each of their backends to answer, saying which do not (nginx leaves those out until they do)."""
    print("On each extra machine, in its kvviz checkout (backends only, writing to the same store):",
          flush=True)
    for host, cmd in commands(upstreams, db, front_host, allow):
        print(f"    {host}:  {cmd}", flush=True)
    if not is_url(db):
        print(f"class server: hand-ins go to {db}, a file on this machine: those made through the other "
              "machines' backends will not reach this teacher page. Share one store: "
              "KVVIZ_DB=postgresql://USER:PASSWORD@HOST:5432/DATABASE (deploy/README.md).",
              file=sys.stderr, flush=True)
    print(f"Waiting up to {wait_s} s for the extra machines' backends to answer:", flush=True)
    result = wait_for(upstreams, wait_s, lambda line: print(line, flush=True), stop=stop)
    for upstream, why in result.items():
        if why is not None:
            print(f"class server: {upstream} does not answer ({why}); nginx sends its students to the "
                  "other backends until it does", file=sys.stderr, flush=True)



def announce_backends(address: str, hosts: list[str], ports: list[int], fail_timeout_s: int,
                      db: str | Path) -> None:
    """Print, on a machine running backends only (listening on `address`), the server lines for
    the front machine's nginx upstream (each of `hosts`, the addresses it reaches this one by, and
    each backend port), and where the hand-ins made through these backends go."""
    first, last = ports[0], ports[-1]
    print(f"kvviz class backends: {len(ports)} `panel serve app.py` on "
          f"{address}:{first}{f'-{last}' if last != first else ''}; in the front machine's "
          "nginx.conf upstream, add:", flush=True)
    for host in hosts:
        for p in ports:
            print(f"    server {host}:{p} max_fails=1 fail_timeout={fail_timeout_s}s;", flush=True)
    print(f"Hand-ins made through these backends go to the shared database {shown(db)}. "
          if is_url(db)
          else f"Hand-ins made through these backends go to {db} on this machine, "
          "not to the front machine's: set KVVIZ_DB=postgresql://... (deploy/README.md). ", end="",
          flush=True)
