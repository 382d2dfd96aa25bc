"""Serve the lesson to a whole class from this machine: `make class` runs this script.

    python deploy/class_server.py [--address 0.0.0.0] [--port 5006] [--allow '*'] [--backends N]

One single-process `panel serve app.py teacher.py` per core (N backends, default: every core) on loopback
ports BASE_PORT+i, behind Debian's nginx on ADDRESS:PORT. nginx keeps each student on one backend
by client address, so a page is built once, where its GET went, and its websocket comes back to
the same process (`panel serve --num-procs` cannot promise that: the GET and the websocket may
reach different processes and the page is built twice). A backend that dies is left out by nginx
(its students go to another, which rebuilds their page from the URL) and restarted here.

Hand-ins: every backend writes students' hand-ins into one store (KVVIZ_DB: a SQLite file, default
./kvviz-class.db in the directory this is started from, passed to the backends as an absolute
path; or, for backends on several machines, a postgresql:// URL that all of them are given), so
the teacher page (/teacher, on whichever backend the teacher reaches) sees the whole class. With
--upstream, it prints the command each extra machine runs (class_machines.py) and waits for their
backends to answer before announcing the students' address. Its passphrase (KVVIZ_TEACHER_KEY, else generated
once and stored in that file) is printed at start by `python -m kvviz.handin.key`.

Everything runs in the foreground and stops together on Ctrl-C (or SIGTERM/SIGHUP). nginx runs as
a child with its configuration, pid, logs and temporary files in a new temporary directory
(RUN_DIR, printed at start; removed at exit unless --keep-run-dir): /etc/nginx is not touched.
While it runs, `kvviz-class-PORT.json` in the system's temporary directory describes the running
server (backends, pids, logs) for `python -m benchmarks.classroom` and the tests
(tools/loopback_class.py).

Standard library only: it runs with any Python 3.11; the backends run with the same interpreter
(in `make class`, the project's virtual environment). This file is the command line and the run;
its sibling modules in deploy/ (imported by name) hold the rest: class_nginx.py (nginx's
configuration and its limits), class_backends.py (a backend, its restarts), class_network.py (ports
and addresses), class_machines.py (the extra machines), class_status.py (the status page).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # (its sibling modules in deploy/, beside this script)
import class_backends as backend  # noqa: E402
import class_machines as machines  # noqa: E402
import class_network as net  # noqa: E402
import class_nginx as nginx_conf  # noqa: E402
import class_status as status  # noqa: E402

ROOT = HERE.parent
DEFAULT_PORT = 5006
DEFAULT_BASE_PORT = 5100
# A session that no websocket has reached yet (or whose websocket has closed) is discarded after
# this long, at the next check. Two needs pull apart: it must cover a page's GET -> its websocket
# (the browser loads the page's scripts in between, from nginx here, not queued behind page builds;
# a page discarded before its websocket comes is built again, not lost), and a closed tab's session
# (with its Play) should be gone within 30 s (issue 10): 25 s + a check every 2 s.
DEFAULT_SESSION_LIFETIME_MS = 25_000
DEFAULT_CHECK_SESSIONS_MS = 2_000  # how often each backend looks for sessions to discard
START_TIMEOUT_S = 180


def state_path(port: int) -> Path:
    """Where a running class server on `port` describes itself (read by tools/loopback_class.py)."""
    return Path(tempfile.gettempdir()) / f"kvviz-class-{port}.json"



class ClassServer:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.app_root = Path(args.root).resolve()
        self.ports = [args.base_port + i for i in range(args.backends)]
        self.origins = net.split_origins(args.allow)
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"kvviz-class-{args.port}-"))
        self.run_dir.chmod(0o711)  # nginx's workers (nobody, under root) reach their temp dirs
        self.state_file = state_path(args.port)
        self.nginx: subprocess.Popen | None = None
        self.backends: list[backend.Backend] = []
        self.stopping = False
        self.ready = False
        self.started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self.teacher = ""

    # -- start ---------------------------------------------------------------------------------
    def check(self) -> str | None:
        """The nginx binary; exits with a message on anything that would stop the start."""
        a = self.args
        for upstream in a.upstream:
            try:
                machines.split_hostport(upstream)
            except ValueError as e:
                sys.exit(f"class server: {e}")
        nginx = a.nginx or nginx_conf.find_nginx()
        if not nginx and not a.backends_only:
            sys.exit("class server: nginx is not installed. `make class` installs it as root; "
                     "otherwise: sudo apt-get install -y nginx")
        if not (self.app_root / "app.py").is_file():
            sys.exit(f"class server: no app.py in {self.app_root}")
        backend_host = a.backend_address if a.backend_address not in ("", "::") else "0.0.0.0"
        busy = [p for p in self.ports if not net.port_free(p, backend_host)]
        if busy:
            sys.exit(f"class server: backend port(s) {busy} in use; choose another --base-port")
        if not a.backends_only and not net.port_free(a.port,
                                                 a.address if a.address not in ("", "::") else "0.0.0.0"):
            sys.exit(f"class server: port {a.port} on {a.address} is in use (another class server? "
                     f"see {self.state_file})")
        if a.port in self.ports:
            sys.exit("class server: --port overlaps the backends' ports")
        return nginx

    def start(self) -> None:
        a = self.args
        nginx = self.check()
        env = dict(os.environ)
        env.setdefault("BOKEH_VALIDATE_DOC", "false")  # Bokeh's document validation off when serving
        env.setdefault("OMP_NUM_THREADS", "1")  # one core per backend: no OpenMP thread pools
        env["PYTHONUNBUFFERED"] = "1"
        env["KVVIZ_DB"] = str(backend.class_db(env))  # one file for every backend, wherever it runs from
        # (nginx paces each address first: the backends' own limits are wider)
        env.update(nginx_conf.backend_limits_env(env))
        # (the teacher page says its class cache is this backend's)
        if len(self.ports) > 1 or a.backends_only:
            env["KVVIZ_BACKENDS"] = str(len(self.ports))
        if not a.backends_only:  # (the teacher page shows it in large type: the address students open)
            env["KVVIZ_STUDENT_URL"] = net.student_urls(a.address, a.port)[0]
        apps = tuple(app for app in backend.APPS if (self.app_root / app).is_file())
        teacher_url = (f"http://{(net.lan_addresses() or ['localhost'])[0]}:{self.ports[0]}/teacher"
                       if a.backends_only else net.student_urls(a.address, a.port, "teacher")[0])
        self.teacher = backend.teacher_line(self.app_root, env, teacher_url)
        for i, port in enumerate(self.ports):
            cmd = backend.backend_command(port, self.origins, a.session_lifetime_ms, a.check_sessions_ms,
                                  a.backend_address, apps)
            self.backends.append(backend.Backend(i, port, cmd, self.run_dir, self.app_root, env))
        for b in self.backends:
            b.start()
        if a.backends_only:
            self._until_ready()
            return

        self.status_server = status.serve(status.Status(self.backends), net.free_loopback_port())
        main, proxy = nginx_conf.nginx_config(self.run_dir, a.address or "0.0.0.0", a.port, self.ports,
                                              self.app_root, fail_timeout_s=a.fail_timeout,
                                              upstreams=a.upstream,
                                              status_port=self.status_server.server_address[1])
        conf = self.run_dir / "nginx.conf"
        conf.write_text(main)
        (self.run_dir / "proxy.conf").write_text(proxy)
        base = [nginx, "-p", str(self.run_dir), "-c", str(conf), "-e", str(self.run_dir / "nginx-error.log")]
        test = subprocess.run([*base, "-t", "-q"], capture_output=True, text=True)
        if test.returncode != 0:
            raise RuntimeError(f"nginx rejected {conf}:\n{test.stderr.strip()}")
        with (self.run_dir / "nginx-stderr.log").open("a") as log:
            self.nginx = subprocess.Popen([*base, "-g", "daemon off;"], stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, preexec_fn=backend.child_setup)
        self._until_ready()

    def _until_ready(self) -> None:
        """Wait for every port, warm the backends up, and say so in the state file."""
        self.write_state()
        self.wait_until_up()
        if self.args.warm:
            self.warm_up()
        self.ready = True
        self.write_state()

    def backend_host(self) -> str:
        """Where this machine reaches its own backends."""
        a = self.args.backend_address
        return "127.0.0.1" if a in ("0.0.0.0", "", "localhost") else a

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        pending = set(self.ports) | (set() if self.args.backends_only else {self.args.port})
        while pending:
            if self.stopping:
                return
            self.check_children(restart=False)
            connect_host = ("127.0.0.1" if self.args.address in ("0.0.0.0", "", "localhost")
                            else self.args.address)
            pending = {p for p in pending
                       if not net.port_open(p, connect_host if p == self.args.port else self.backend_host())}
            if pending and time.monotonic() > deadline:
                raise RuntimeError(f"ports {sorted(pending)} not listening after {START_TIMEOUT_S} s")
            time.sleep(0.3)

    def warm_up(self) -> None:
        """The pages students reach first from each backend directly (the full lesson, and each
        node continued live from the recorded lesson), so that the first student does not wait
        for the imports (torch, the model) and first builds of a fresh process. Their sessions
        are discarded as unused."""
        errors: list[str] = []

        def get(b: backend.Backend) -> None:
            for path in backend.WARM_PATHS:
                try:
                    with urllib.request.urlopen(f"http://{self.backend_host()}:{b.port}{path}",
                                                timeout=START_TIMEOUT_S) as r:
                        r.read()
                except (OSError, urllib.error.URLError) as e:
                    errors.append(f"backend {b.index} (port {b.port}) {path}: {e}; see {b.log_path}")

        threads = [threading.Thread(target=get, args=(b,), daemon=True) for b in self.backends]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for e in errors:
            print(f"class server: warm-up page failed on {e}", file=sys.stderr, flush=True)

    # -- run -------------------------------------------------------------------------------------
    def write_state(self) -> None:
        a = self.args
        state = {
            "pid": os.getpid(), "started": self.started, "ready": self.ready,
            "address": a.address, "port": a.port, "url": f"http://127.0.0.1:{a.port}/app",
            "student_urls": net.student_urls(a.address, a.port), "allow": self.origins,
            "teacher_url": f"http://127.0.0.1:{a.port}/teacher", "db": machines.shown(backend.class_db()),
            "run_dir": str(self.run_dir), "app_root": str(self.app_root),
            "access_log": str(self.run_dir / "access.log"),
            "nginx_error_log": str(self.run_dir / "nginx-error.log"),
            "nginx_pid": self.nginx.pid if self.nginx else None, "session_lifetime_ms": a.session_lifetime_ms,
            "check_sessions_ms": a.check_sessions_ms, "backends": [b.describe() for b in self.backends],
        }
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.state_file)

    def check_children(self, restart: bool = True) -> None:
        if self.nginx is not None and self.nginx.poll() is not None:
            err = (self.run_dir / "nginx-error.log")
            tail = err.read_text(errors="replace")[-2000:] if err.exists() else ""
            raise RuntimeError(f"nginx exited ({self.nginx.returncode}):\n{tail}")
        now = time.monotonic()
        for b in self.backends:
            if b.proc is None or b.proc.poll() is None:
                continue
            if not restart:
                tail = b.log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"backend {b.index} (port {b.port}) exited ({b.proc.returncode}):\n{tail}")
            if b.restart_when_due(now):
                self.write_state()
                print(f"class server: backend {b.index} restarted (pid {b.proc.pid})", file=sys.stderr,
                      flush=True)

    def serve_forever(self) -> None:
        a = self.args
        if a.backends_only:
            hosts = net.lan_addresses() if a.backend_address in ("0.0.0.0", "") else [a.backend_address]
            machines.announce_backends(a.backend_address, hosts, self.ports, a.fail_timeout,
                                       backend.class_db())
            print(self.teacher, flush=True)
            print(f"Logs: {self.run_dir}. Ctrl-C stops everything.", flush=True)
            while not self.stopping:
                self.check_children()
                time.sleep(0.5)
            return
        first, last = self.ports[0], self.ports[-1]
        print(f"kvviz class server: {len(self.backends)} backend(s) `panel serve app.py` on 127.0.0.1:{first}"
              f"{f'-{last}' if last != first else ''}, nginx on "
              f"{nginx_conf.listen_spec(a.address or '0.0.0.0', a.port)}",
              flush=True)
        if a.upstream:
            self.announce_upstreams()
        print("Students open (the lesson plays in their browsers; their own prompts run here, live):",
              flush=True)
        for url in net.student_urls(a.address, a.port):
            print(f"    {url}", flush=True)
        print(self.teacher, flush=True)
        status_url = net.student_urls(a.address, a.port, 'status')[0]
        print(f"Status (sessions, CPU, memory per backend): {status_url}", flush=True)
        print(f"Websocket origins allowed: {' '.join(self.origins)}. Logs: {self.run_dir}. "
              "Ctrl-C stops everything.", flush=True)
        while not self.stopping:
            self.check_children()
            time.sleep(0.5)

    def announce_upstreams(self) -> None:
        """The command each extra machine runs, then wait for their backends (class_machines.announce)."""
        a = self.args
        front = (net.lan_addresses() or ["127.0.0.1"])[0] if a.address in ("0.0.0.0", "", "::") else a.address
        machines.announce(a.upstream, backend.class_db(), front, self.origins, a.upstream_wait,
                          stop=lambda: self.stopping)

    # -- stop -------------------------------------------------------------------------------------
    def stop(self) -> None:
        self.stopping = True
        backend.stop_process(self.nginx, signal.SIGQUIT)  # graceful: no new connections, then exit
        procs = [b.proc for b in self.backends]
        for proc in procs:  # all asked at once, then each waited for
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            backend.stop_process(proc)
        with contextlib.suppress(FileNotFoundError):
            state = json.loads(self.state_file.read_text())
            if state.get("pid") == os.getpid():
                self.state_file.unlink()
        if not self.args.keep_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--address", default="0.0.0.0",
                   help="where nginx listens (default 0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"nginx's port (default {DEFAULT_PORT})")
    p.add_argument("--allow", default="*",
                   help="websocket origins the backends accept, host[:port], separated by commas or spaces "
                        "(default '*': any, fine on a classroom network; e.g. 192.168.1.20:5006)")
    p.add_argument("--backends", type=int, default=os.cpu_count() or 1,
                   help="single-process `panel serve` backends (default: one per core)")
    p.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT,
                   help=f"backend i listens on 127.0.0.1:BASE_PORT+i (default {DEFAULT_BASE_PORT})")
    p.add_argument("--session-lifetime-ms", type=int, default=DEFAULT_SESSION_LIFETIME_MS,
                   help="`panel serve --unused-session-lifetime`: how long a session waits for its "
                        "websocket, and lingers after its tab closes (default "
                        f"{DEFAULT_SESSION_LIFETIME_MS})")
    p.add_argument("--check-sessions-ms", type=int, default=DEFAULT_CHECK_SESSIONS_MS,
                   help=f"`panel serve --check-unused-sessions` (default {DEFAULT_CHECK_SESSIONS_MS})")
    p.add_argument("--fail-timeout", type=int, default=10, metavar="S",
                   help="nginx leaves a backend that refused a connection out for S seconds (default 10)")
    p.add_argument("--upstream", action="append", default=[], metavar="HOST:PORT",
                   help="a backend on another machine (run there with --backends-only) for nginx here "
                        "(repeatable)")
    p.add_argument("--upstream-wait", type=int, default=300, metavar="S",
                   help="wait up to S seconds for each --upstream to answer before announcing (default 300)")
    p.add_argument("--backend-address", default="127.0.0.1",
                   help="where the backends listen (default 127.0.0.1; another machine's nginx needs e.g. "
                        "0.0.0.0)")
    p.add_argument("--backends-only", action="store_true",
                   help="run only the backends, for the upstream of nginx on another machine (prints its "
                        "server lines)")
    p.add_argument("--root", default=str(ROOT),
                   help="the directory holding app.py and assets/ (default: this checkout)")
    p.add_argument("--nginx", help="the nginx binary (default: nginx on PATH, or /usr/sbin/nginx)")
    p.add_argument("--no-warm", dest="warm", action="store_false",
                   help="do not build one page on each backend before announcing the URL")
    p.add_argument("--keep-run-dir", action="store_true",
                   help="keep the run directory (logs, config) at exit")
    args = p.parse_args(argv)
    if not 1 <= args.backends <= 256:
        p.error("--backends must be between 1 and 256")
    if args.session_lifetime_ms < 1000 or args.check_sessions_ms < 100:
        p.error("--session-lifetime-ms must be >= 1000 and --check-sessions-ms >= 100")
    if not net.split_origins(args.allow):
        p.error("--allow needs at least one origin ('*' for any)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    server = ClassServer(args)

    def on_signal(signum, _frame):
        if not server.stopping:
            server.stopping = True
            raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    code = 0
    try:
        server.start()
        if not server.stopping:
            server.serve_forever()
    except KeyboardInterrupt:
        pass
    except RuntimeError as e:
        print(f"class server: {e}", file=sys.stderr, flush=True)
        code = 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        server.stop()
        print(f"kvviz class server stopped{f'; logs kept in {server.run_dir}' if args.keep_run_dir else ''}.",
              flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
