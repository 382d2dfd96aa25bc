"""The class server's nginx: its configuration (nginx.conf and proxy.conf, rendered from the
templates beside this file) and the limits per address it applies, which are the backends' too
(kvviz/process/throttle.py). Used by class_server.py.

    nginx_config(run_dir, address, port, backend_ports, app_root, ...)  # (nginx.conf, proxy.conf)
    request_limits(environ)       # {"LIVE": (rate, burst), "HANDIN": ...}, as the backends apply them
    backend_limits_env(environ)   # the backends' own limits behind nginx (twice its burst)

Standard library only, like class_server.py.
"""

from __future__ import annotations

import contextlib
import grp
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NGINX_TEMPLATE = HERE / "nginx.conf.template"
PROXY_TEMPLATE = HERE / "proxy.conf.template"


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
