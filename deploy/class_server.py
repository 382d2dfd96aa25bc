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
(in `make class`, the project's virtual environment).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import grp
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # (deploy/class_status.py, beside this script)
import class_machines as machines  # noqa: E402
import class_status as status  # noqa: E402

ROOT = HERE.parent
NGINX_TEMPLATE = HERE / "nginx.conf.template"
PROXY_TEMPLATE = HERE / "proxy.conf.template"
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
RESTART_DELAYS_S = (1, 2, 5, 10, 30)  # a backend that keeps dying is restarted less often
PR_SET_PDEATHSIG = 1


def state_path(port: int) -> Path:
    """Where a running class server on `port` describes itself (read by tools/loopback_class.py)."""
    return Path(tempfile.gettempdir()) / f"kvviz-class-{port}.json"


def find_nginx() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    return next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)


def package_dir(name: str) -> Path | None:
    """The installed package's directory, found without importing it."""
    spec = importlib.util.find_spec(name)
    return Path(spec.origin).parent if spec and spec.origin else None


def render(template: str, values: dict[str, str]) -> str:
    """`template` with every @@NAME@@ replaced by values[NAME]; a name left over is an error."""
    out = template
    for name, value in values.items():
        out = out.replace(f"@@{name}@@", value)
    if "@@" in out:
        start = out.index("@@")
        raise ValueError(f"unfilled placeholder near {out[start:start + 40]!r}")
    return out


def worker_user_line() -> str:
    """nginx's `user` line: workers run as nobody when started by root (the default group
    `nobody` does not exist on Debian); otherwise as whoever runs this (no line)."""
    if os.geteuid() != 0:
        return "# (not root: nginx's workers run as the user who started it)"
    for group in ("nogroup", "nobody"):
        with contextlib.suppress(KeyError):
            grp.getgrnam(group)
            return f"user nobody {group};"
    return "user nobody;"


def listen_spec(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


PAGE_BUILDS_PER_BACKEND = 4  # pages built at once per backend before a student sees "busy, retrying"


def _load_throttle():
    """kvviz/process/throttle.py (standard library only): its limits are nginx's too."""
    spec = importlib.util.spec_from_file_location("kvviz_throttle",
                                                  HERE.parent / "kvviz" / "process" / "throttle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


throttle = _load_throttle()
LIVE_QUEUE = 4  # live questions from one address nginx holds, paced, beyond the burst before it says 429
HANDIN_QUEUE = 40  # hand-ins from one address: a class behind one NAT address hands in together


def request_limits(environ=os.environ) -> dict[str, tuple[float, int]]:
    """{"LIVE": (rate a second, burst), "HANDIN": ...} as the backends apply them (KVVIZ_LIVE_RATE,
    KVVIZ_LIVE_BURST, ... else kvviz/process/throttle.py's defaults); rate 0: none."""
    live = throttle.limit("LIVE", throttle.LIVE_RATE_PER_S, throttle.LIVE_BURST, environ)
    handin = throttle.limit("HANDIN", throttle.HANDIN_RATE_PER_S, throttle.HANDIN_BURST, environ)
    return {"LIVE": (live.rate, live.burst), "HANDIN": (handin.rate, handin.burst)}


def limit_req_values(name: str, rate: float, burst: int, queue: int) -> dict[str, str]:
    """nginx's zone rate (per minute: a rate under one a second is written so) and its `limit_req`
    line: `burst` at once (delay), `queue` more held and paced; rate 0: no limit_req line."""
    zone = name.lower()
    if rate <= 0:
        return {f"{name}_RATE": "1r/m", f"{name}_LIMIT": f"# (no limit: KVVIZ_{name}_RATE=0)"}
    held, now = burst - 1 + queue, burst - 1
    line = (f"limit_req zone=kvviz_{zone}" + (f" burst={held}" if held else "")
            + (f" delay={now}" if now else ""))
    return {f"{name}_RATE": f"{max(1, round(rate * 60))}r/m", f"{name}_LIMIT": line + ";"}


def backend_limits_env(environ=os.environ) -> dict[str, str]:
    """The backends' own limits behind nginx: the same rate, twice nginx's burst (nginx paces a
    burst; the backends' buckets should never refuse what nginx let through)."""
    return {f"KVVIZ_{name}_{key}": str(value) for name, (rate, burst) in request_limits(environ).items()
            for key, value in (("RATE", rate), ("BURST", 2 * burst))}


def nginx_config(run_dir: Path, address: str, port: int, backend_ports: list[int], app_root: Path,
                 max_fails: int = 1, fail_timeout_s: int = 10, upstreams: list[str] | None = None,
                 status_port: int = 0, environ=os.environ) -> tuple[str, str]:
    """(nginx.conf, proxy.conf) for these backends (and `upstreams`, HOST:PORT of backends on other
    machines), rendered from the templates in deploy/; the limits per address as `environ` says
    (request_limits)."""
    bokeh, panel = package_dir("bokeh"), package_dir("panel")
    hosts = [f"127.0.0.1:{p}" for p in backend_ports] + list(upstreams or [])
    limits = request_limits(environ)
    # (a token's refill)
    live_retry = throttle.retry_after(1 / limits["LIVE"][0]) if limits["LIVE"][0] > 0 else "1"
    servers = "\n".join(f"        server {h} max_fails={max_fails} fail_timeout={fail_timeout_s}s;"
                        for h in hosts)
    main = render(NGINX_TEMPLATE.read_text(), {
        "RUN_DIR": str(run_dir),
        "USER": worker_user_line(),
        "SERVERS": servers,
        "LISTEN": listen_spec(address, port),
        # (a missing package leaves a path that does not exist: those requests go to a backend)
        "BOKEH_STATIC": str(bokeh / "server" / "static") if bokeh else "/nonexistent",
        "PANEL_DIST": str(panel / "dist") if panel else "/nonexistent",
        "ASSETS": str(app_root / "assets"),
        "RECORDINGS": str(recordings_dir()),
        "DEPLOY": str(HERE),
        "MAX_PAGE_BUILDS": str(PAGE_BUILDS_PER_BACKEND * len(hosts)),
        "STATUS_PORT": str(status_port),
        **limit_req_values("LIVE", *limits["LIVE"], LIVE_QUEUE),
        **limit_req_values("HANDIN", *limits["HANDIN"], HANDIN_QUEUE),
        "LIVE_NOW": str(limits["LIVE"][1]),
        "LIVE_QUEUE": str(LIVE_QUEUE),
        # (in single quotes in nginx's config: JSON with no single quote in it)
        "LIVE_RETRY": live_retry,
        "SLOW_DOWN_JSON": json.dumps({"ok": False, "message": throttle.SLOW_DOWN,
                                      "retry_after_s": int(live_retry)}),
        "SLOW_DOWN_HANDIN_JSON": json.dumps({"ok": False, "message": throttle.SLOW_DOWN_HANDIN,
                                             "retry_after_s": 2}),
    })
    proxy = render(PROXY_TEMPLATE.read_text(), {"TRIES": str(len(hosts))})
    return main, proxy


def recordings_dir() -> Path:
    """This code's recorded lesson (kvviz/export/cache.py), made by the first backend that starts:
    nginx serves its files from disk once they are there."""
    if str(HERE.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent))
    from kvviz.export import cache_folder

    return cache_folder.cache_root() / cache_folder.key()


def split_origins(allow: str) -> list[str]:
    """ALLOW as given to make: origins separated by commas or spaces ('*' allows any)."""
    return [o for o in allow.replace(",", " ").split() if o]


APPS = ("app.py", "teacher.py")  # /app for the students, /teacher for the teacher
# Warmed up on each backend at start: the live lesson (what / opens until the recording is made),
# and Explain it back (live from the recorded lesson). Each backend readies its own engine for
# what no recording holds by itself, once the recording is there (kvviz/serve/routes.py).
WARM_PATHS = ("/app", "/app?node=explain")


def backend_command(port: int, origins: list[str], session_lifetime_ms: int, check_sessions_ms: int,
                    address: str = "127.0.0.1", apps: tuple[str, ...] = APPS) -> list[str]:
    cmd = [sys.executable, "-m", "panel", "serve", *apps, "--port", str(port), "--address", address,
           "--num-procs", "1", "--static-dirs", "assets=./assets", "--use-xheaders",
           "--plugins", "kvviz.serve.routes",  # (/: the recorded lesson, played in the browser)
           "--setup", "on_start.py",  # (its recording begun at the backend's start)
           "--unused-session-lifetime", str(session_lifetime_ms),
           "--check-unused-sessions", str(check_sessions_ms)]
    for origin in origins:
        cmd += ["--allow-websocket-origin", origin]
    return cmd


def _child_setup() -> None:
    """In each child: its own process group (Ctrl-C reaches only this script, which then stops
    the children in order), and SIGTERM if this script dies without cleaning up."""
    os.setsid()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def port_free(port: int, address: str = "127.0.0.1") -> bool:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address if address not in ("localhost",) else "127.0.0.1", port))
        except OSError:
            return False
    return True


def lan_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback, best first."""
    found: list[str] = []
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))  # no packet is sent: this picks the default route's address
        found.append(s.getsockname()[0])
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
        found += out.split()
    return [a for a in dict.fromkeys(found) if "." in a and not a.startswith("127.")]


def student_urls(address: str, port: int, page: str = "") -> list[str]:
    wildcard = address in ("0.0.0.0", "::", "")
    hosts = (lan_addresses() or ["localhost"]) if wildcard else [address]
    return [f"http://{h}:{port}/{page}" for h in hosts]


def class_db(environ=os.environ) -> Path | str:
    """The hand-ins' database: a postgresql:// URL as given (shared by every machine), else the
    file's absolute path (the backends run in the app's directory)."""
    value = (environ.get("KVVIZ_DB") or "").strip() or "kvviz-class.db"
    return value if machines.is_url(value) else Path(value).expanduser().resolve()


def teacher_line(app_root: Path, env: dict, url: str) -> str:
    """The teacher page's address and passphrase, from `python -m kvviz.handin.key` (which
    creates the passphrase in the database when KVVIZ_TEACHER_KEY is not set)."""
    try:
        out = subprocess.run([sys.executable, "-m", "kvviz.handin.key", "--url", url], cwd=app_root, env=env,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"Teacher page: {url} (its passphrase could not be read: {e})"
    return out.stdout.strip() or (
        f"Teacher page: {url} (its passphrase could not be read: {out.stderr.strip()[-300:]})")


# a backend on port P serves its counts on 127.0.0.1:P+500 (kvviz/process/metrics.py)
METRICS_PORT_OFFSET = 500


class Backend:
    def __init__(self, index: int, port: int, cmd: list[str], run_dir: Path, cwd: Path, env: dict):
        self.metrics_port = port + METRICS_PORT_OFFSET
        env = {**env, "KVVIZ_METRICS_PORT": str(self.metrics_port)}
        self.index, self.port, self.cmd, self.cwd, self.env = index, port, cmd, cwd, env
        self.log_path = run_dir / f"backend-{index}.log"
        self.pid_path = run_dir / f"backend-{index}.pid"
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        with self.log_path.open("a") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         preexec_fn=_child_setup)
        self.pid_path.write_text(f"{self.proc.pid}\n")

    def describe(self) -> dict:
        return {"index": self.index, "port": self.port, "pid": self.proc.pid if self.proc else None,
                "log": str(self.log_path), "pid_file": str(self.pid_path), "restarts": self.restarts}


def stop_process(proc: subprocess.Popen | None, sig: int = signal.SIGTERM, timeout_s: float = 10) -> None:
    """Stop one child (and its process group) and wait for it; SIGKILL if it does not go."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class ClassServer:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.app_root = Path(args.root).resolve()
        self.ports = [args.base_port + i for i in range(args.backends)]
        self.origins = split_origins(args.allow)
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"kvviz-class-{args.port}-"))
        self.run_dir.chmod(0o711)  # nginx's workers (nobody, under root) reach their temp dirs
        self.state_file = state_path(args.port)
        self.nginx: subprocess.Popen | None = None
        self.backends: list[Backend] = []
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
        nginx = a.nginx or find_nginx()
        if not nginx and not a.backends_only:
            sys.exit("class server: nginx is not installed. `make class` installs it as root; "
                     "otherwise: sudo apt-get install -y nginx")
        if not (self.app_root / "app.py").is_file():
            sys.exit(f"class server: no app.py in {self.app_root}")
        backend_host = a.backend_address if a.backend_address not in ("", "::") else "0.0.0.0"
        busy = [p for p in self.ports if not port_free(p, backend_host)]
        if busy:
            sys.exit(f"class server: backend port(s) {busy} in use; choose another --base-port")
        if not a.backends_only and not port_free(a.port,
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
        env["KVVIZ_DB"] = str(class_db(env))  # one file for every backend, wherever it runs from
        # (nginx paces each address first: the backends' own limits are wider)
        env.update(backend_limits_env(env))
        # (the teacher page says its class cache is this backend's)
        if len(self.ports) > 1 or a.backends_only:
            env["KVVIZ_BACKENDS"] = str(len(self.ports))
        if not a.backends_only:  # (the teacher page shows it in large type: the address students open)
            env["KVVIZ_STUDENT_URL"] = student_urls(a.address, a.port)[0]
        apps = tuple(app for app in APPS if (self.app_root / app).is_file())
        teacher_url = (f"http://{(lan_addresses() or ['localhost'])[0]}:{self.ports[0]}/teacher"
                       if a.backends_only else student_urls(a.address, a.port, "teacher")[0])
        self.teacher = teacher_line(self.app_root, env, teacher_url)
        for i, port in enumerate(self.ports):
            cmd = backend_command(port, self.origins, a.session_lifetime_ms, a.check_sessions_ms,
                                  a.backend_address, apps)
            self.backends.append(Backend(i, port, cmd, self.run_dir, self.app_root, env))
        for b in self.backends:
            b.start()
        if a.backends_only:
            self._until_ready()
            return

        self.status_server = status.serve(status.Status(self.backends), free_loopback_port())
        main, proxy = nginx_config(self.run_dir, a.address or "0.0.0.0", a.port, self.ports, self.app_root,
                                   fail_timeout_s=a.fail_timeout, upstreams=a.upstream,
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
                                          stdin=subprocess.DEVNULL, preexec_fn=_child_setup)
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
                       if not port_open(p, connect_host if p == self.args.port else self.backend_host())}
            if pending and time.monotonic() > deadline:
                raise RuntimeError(f"ports {sorted(pending)} not listening after {START_TIMEOUT_S} s")
            time.sleep(0.3)

    def warm_up(self) -> None:
        """The pages students reach first from each backend directly (the full lesson, and each
        node continued live from the recorded lesson), so that the first student does not wait
        for the imports (torch, the model) and first builds of a fresh process. Their sessions
        are discarded as unused."""
        errors: list[str] = []

        def get(b: Backend) -> None:
            for path in WARM_PATHS:
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
            "student_urls": student_urls(a.address, a.port), "allow": self.origins,
            "teacher_url": f"http://127.0.0.1:{a.port}/teacher", "db": machines.shown(class_db()),
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
            if b.restart_at is None:
                delay = RESTART_DELAYS_S[min(b.restarts, len(RESTART_DELAYS_S) - 1)]
                b.restart_at = now + delay
                print(f"class server: backend {b.index} (port {b.port}) exited ({b.proc.returncode}); nginx "
                      f"sends its students to the others; restarting it in {delay} s", file=sys.stderr,
                      flush=True)
            elif now >= b.restart_at:
                b.restart_at = None
                b.restarts += 1
                b.start()
                self.write_state()
                print(f"class server: backend {b.index} restarted (pid {b.proc.pid})", file=sys.stderr,
                      flush=True)

    def serve_forever(self) -> None:
        a = self.args
        first, last = self.ports[0], self.ports[-1]
        if a.backends_only:
            print(f"kvviz class backends: {len(self.backends)} `panel serve app.py` on "
                  f"{a.backend_address}:{first}{f'-{last}' if last != first else ''}; in the front machine's "
                  "nginx.conf upstream, add:", flush=True)
            for host in (lan_addresses() if a.backend_address in ("0.0.0.0", "") else [a.backend_address]):
                for p in self.ports:
                    print(f"    server {host}:{p} max_fails=1 fail_timeout={a.fail_timeout}s;", flush=True)
            db = class_db()
            print(f"Hand-ins made through these backends go to the shared database {machines.shown(db)}. "
                  if machines.is_url(db)
                  else f"Hand-ins made through these backends go to {db} on this machine, "
                  "not to the front machine's: set KVVIZ_DB=postgresql://... (deploy/README.md). ", end="",
                  flush=True)
            print(self.teacher, flush=True)
            print(f"Logs: {self.run_dir}. Ctrl-C stops everything.", flush=True)
            while not self.stopping:
                self.check_children()
                time.sleep(0.5)
            return
        print(f"kvviz class server: {len(self.backends)} backend(s) `panel serve app.py` on 127.0.0.1:{first}"
              f"{f'-{last}' if last != first else ''}, nginx on "
              f"{listen_spec(a.address or '0.0.0.0', a.port)}",
              flush=True)
        if a.upstream:
            self.announce_upstreams()
        print("Students open (the lesson plays in their browsers; their own prompts run here, live):",
              flush=True)
        for url in student_urls(a.address, a.port):
            print(f"    {url}", flush=True)
        print(self.teacher, flush=True)
        print(f"Status (sessions, CPU, memory per backend): {student_urls(a.address, a.port, 'status')[0]}",
              flush=True)
        print(f"Websocket origins allowed: {' '.join(self.origins)}. Logs: {self.run_dir}. "
              "Ctrl-C stops everything.", flush=True)
        while not self.stopping:
            self.check_children()
            time.sleep(0.5)

    def announce_upstreams(self) -> None:
        """The command each extra machine runs, then wait (up to --upstream-wait s) for each of
        their backends to answer, saying which do not (nginx leaves those out until they do)."""
        a, db = self.args, class_db()
        front = (lan_addresses() or ["127.0.0.1"])[0] if a.address in ("0.0.0.0", "", "::") else a.address
        print("On each extra machine, in its kvviz checkout (backends only, writing to the same store):",
              flush=True)
        for host, cmd in machines.commands(a.upstream, db, front, self.origins):
            print(f"    {host}:  {cmd}", flush=True)
        if not machines.is_url(db):
            print(f"class server: hand-ins go to {db}, a file on this machine: those made through the other "
                  "machines' backends will not reach this teacher page. Share one store: "
                  "KVVIZ_DB=postgresql://USER:PASSWORD@HOST:5432/DATABASE (deploy/README.md).",
                  file=sys.stderr, flush=True)
        print(f"Waiting up to {a.upstream_wait} s for the extra machines' backends to answer:", flush=True)
        result = machines.wait_for(a.upstream, a.upstream_wait, lambda line: print(line, flush=True),
                                   stop=lambda: self.stopping)
        for upstream, why in result.items():
            if why is not None:
                print(f"class server: {upstream} does not answer ({why}); nginx sends its students to the "
                      "other backends until it does", file=sys.stderr, flush=True)

    # -- stop -------------------------------------------------------------------------------------
    def stop(self) -> None:
        self.stopping = True
        stop_process(self.nginx, signal.SIGQUIT)  # graceful: no new connections, then exit
        procs = [b.proc for b in self.backends]
        for proc in procs:  # all asked at once, then each waited for
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            stop_process(proc)
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
    if not split_origins(args.allow):
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
