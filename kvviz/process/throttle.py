"""How fast one client may ask this server for what costs it: a token bucket per address.

A live answer (`/lesson-live`) is a few hundred milliseconds of this process's engine, one at a
time: one page or script asking as fast as it can would make every other student of this backend
wait. Each client address holds a bucket of BURST tokens, refilled at RATE a second; a request
takes one, and finds none: 429 with `Retry-After` and a sentence the page shows. A student
typing never runs dry: a few Enters in a second, a link to a state no recording holds, then a
question every few seconds. A hand-in (`/lesson-handin`) costs little and has its own limit per
student (kvviz/handin/model.py: RateLimit); per address it gets a bucket wide enough for a class
behind one address handing in together.

nginx does the same in front of `make class` (deploy/nginx.conf.template: limit_req, which paces
a burst instead of refusing it); this one is for a server without nginx (`make lesson`, `kvviz
lesson`), and a backstop behind it (class_server.py gives its backends twice nginx's burst, so
that nginx's pace never meets this one's refusal).

The address is the socket's. Only when the socket's peer is a proxy this server trusts (loopback,
or an address in KVVIZ_TRUSTED_PROXIES: an nginx on another machine) does it take the address
that proxy names (X-Real-IP, else the last X-Forwarded-For: the one the proxy added); a header
from anyone else is ignored, or a script would name a new address with each request.

One address is one bucket, as in nginx: a class behind one NAT address shares one (and one
backend: nginx places students by address). `KVVIZ_LIVE_RATE` and `KVVIZ_LIVE_BURST` set it
(0: no limit); docs/architecture.md says what a NAT class should set.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

LIVE_RATE_PER_S = 0.5  # live answers a second per address, sustained (one every 2 s)
LIVE_BURST = 5  # ... and at once
HANDIN_RATE_PER_S = 5.0  # hand-ins a second per address (each student: one every 3 s anyway)
HANDIN_BURST = 40
TRACKED = 10_000  # addresses remembered (the least recent forgotten: a full bucket again)
SLOW_DOWN = "You are sending questions faster than the server can answer: wait a second and try again."
SLOW_DOWN_HANDIN = "Too many hand-ins from this address at once: wait a few seconds and try again."


class TokenBucket:
    """`burst` tokens, refilled at `rate` a second; `take` spends one if there is one."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens, self.last = float(burst), clock()

    def take(self) -> float:
        """0.0 when a token was taken now, else the seconds until one will be there."""
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class Buckets:
    """One TokenBucket per key (a client's address), the `most` most recent kept. rate 0: no limit."""

    def __init__(self, rate: float, burst: int, most: int = TRACKED,
                 clock: Callable[[], float] = time.monotonic):
        self.rate, self.burst, self.most, self.clock = rate, max(1, burst), most, clock
        self._by_key: OrderedDict[str, TokenBucket] = OrderedDict()

    def take(self, key: str) -> float:
        """0.0 when `key` may go on now, else the seconds it should wait."""
        if self.rate <= 0:
            return 0.0
        bucket = self._by_key.pop(key, None) or TokenBucket(self.rate, self.burst, self.clock)
        self._by_key[key] = bucket
        while len(self._by_key) > self.most:
            self._by_key.popitem(last=False)
        return bucket.take()


def retry_after(wait_s: float) -> str:
    """`Retry-After`'s whole seconds: at least 1."""
    return str(max(1, math.ceil(wait_s)))


def trusted_proxies(environ: Mapping[str, str] = os.environ) -> list:
    """Loopback, and the addresses or networks in KVVIZ_TRUSTED_PROXIES (commas or spaces)."""
    nets = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")]
    for item in environ.get("KVVIZ_TRUSTED_PROXIES", "").replace(",", " ").split():
        try:
            nets.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            continue  # (not an address: trusts nothing more)
    return nets


def _ip(text: str | None):
    try:
        return ipaddress.ip_address((text or "").strip())
    except ValueError:
        return None


def client_address(peer: str, headers: Mapping[str, str], trusted: list) -> str:
    """The client's address: `peer` (the socket's), or the one a trusted proxy at `peer` names."""
    ip = _ip(peer)
    if ip is None or not any(ip in net for net in trusted):
        return peer
    named = _ip(headers.get("X-Real-IP"))
    if named is None:
        forwarded = [p for p in (headers.get("X-Forwarded-For") or "").split(",") if p.strip()]
        named = _ip(forwarded[-1]) if forwarded else None
    return str(named) if named is not None else peer


def peer_of(request) -> str:
    """The address of the socket a Tornado request came on (not one that `--use-xheaders` put in
    `remote_ip` from a header)."""
    address = getattr(getattr(request.connection, "context", None), "address", None)
    if isinstance(address, tuple) and address:
        return str(address[0])
    return str(request.remote_ip or "")


def refused(handler, buckets: Buckets, message: str) -> bool:
    """Whether `handler`'s client asked too fast: if so it has been answered 429, with
    `Retry-After` and, as JSON, `{"ok": false, "message": ..., "retry_after_s": ...}`."""
    wait_s = buckets.take(client_address(peer_of(handler.request), handler.request.headers, TRUSTED))
    if not wait_s:
        return False
    handler.set_status(429)
    handler.set_header("Retry-After", retry_after(wait_s))
    handler.set_header("Content-Type", "application/json")
    handler.set_header("Cache-Control", "no-store")
    handler.finish(json.dumps({"ok": False, "message": message, "retry_after_s": int(retry_after(wait_s))}))
    return True


def limit(name: str, rate: float, burst: int, environ: Mapping[str, str] = os.environ) -> Buckets:
    """Buckets at `rate` and `burst`, or as KVVIZ_<NAME>_RATE and KVVIZ_<NAME>_BURST say."""
    def number(key: str, default: float) -> float:
        try:
            return float(environ.get(f"KVVIZ_{name}_{key}", default))
        except ValueError:
            return default
    return Buckets(number("RATE", rate), int(number("BURST", burst)))


LIVE = limit("LIVE", LIVE_RATE_PER_S, LIVE_BURST)
HANDIN = limit("HANDIN", HANDIN_RATE_PER_S, HANDIN_BURST)
TRUSTED = trusted_proxies()
