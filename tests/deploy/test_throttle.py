"""One client cannot starve the others (kvviz/process/throttle.py): the token bucket per address,
which address a request is counted against, and the lesson's routes answering 429 with
`Retry-After` and a sentence, computing nothing."""

from __future__ import annotations

import json

import pytest
from async_support import fetch_all

from kvviz.process import throttle
from kvviz.process.throttle import Buckets, TokenBucket, client_address, trusted_proxies


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_lets_a_burst_through_then_one_per_refill_and_says_how_long_to_wait():
    clock = Clock()
    b = TokenBucket(rate=2.0, burst=3, clock=clock)
    assert [b.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert b.take() == pytest.approx(0.5)  # (two a second: the next in half a second)
    clock.now += 0.25
    assert b.take() == pytest.approx(0.25)  # (a refused request spends nothing)
    clock.now += 0.25
    assert b.take() == 0.0 and b.take() == pytest.approx(0.5)
    clock.now += 3600  # a long pause fills it to its burst, no more
    assert [b.take() == 0.0 for _ in range(4)] == [True, True, True, False]


def test_each_address_has_its_own_bucket_and_rate_zero_is_no_limit():
    clock = Clock()
    limits = Buckets(rate=1.0, burst=2, clock=clock)
    assert limits.take("10.0.0.1") == 0.0 and limits.take("10.0.0.1") == 0.0
    assert limits.take("10.0.0.1") > 0  # the flooder waits...
    assert limits.take("10.0.0.2") == 0.0  # ...and the next student does not
    assert all(Buckets(rate=0, burst=1).take("x") == 0.0 for _ in range(100))


def test_the_least_recent_addresses_are_forgotten_so_memory_stays_bounded():
    limits = Buckets(rate=1.0, burst=1, most=2, clock=Clock())
    for who in ("a", "b", "c"):
        assert limits.take(who) == 0.0
    assert len(limits._by_key) == 2 and "a" not in limits._by_key
    assert limits.take("a") == 0.0  # (forgotten: a full bucket again)
    assert limits.take("c") > 0


def test_the_limits_are_set_from_the_environment_and_a_bad_value_keeps_the_default():
    assert throttle.limit("LIVE", 1.0, 5, {"KVVIZ_LIVE_RATE": "0"}).take("x") == 0.0
    custom = throttle.limit("LIVE", 1.0, 5, {"KVVIZ_LIVE_RATE": "3", "KVVIZ_LIVE_BURST": "9"})
    assert (custom.rate, custom.burst) == (3.0, 9)
    assert (throttle.limit("LIVE", 1.0, 5, {"KVVIZ_LIVE_RATE": "fast"}).rate) == 1.0


TRUSTED = trusted_proxies({})


@pytest.mark.parametrize(("peer", "headers", "counted_as"), [
    ("192.0.2.7", {}, "192.0.2.7"),
    # a header from a client that is not a proxy of ours names nothing: a script would name a new
    # address with each request
    ("192.0.2.7", {"X-Real-IP": "198.51.100.1"}, "192.0.2.7"),
    ("192.0.2.7", {"X-Forwarded-For": "198.51.100.1"}, "192.0.2.7"),
    # nginx on this machine: the address it saw
    ("127.0.0.1", {"X-Real-IP": "198.51.100.1"}, "198.51.100.1"),
    ("::1", {"X-Real-IP": "2001:db8::5"}, "2001:db8::5"),
    # ...else the address nginx added last to X-Forwarded-For (the ones before it, the client wrote)
    ("127.0.0.1", {"X-Forwarded-For": "203.0.113.9, 198.51.100.1"}, "198.51.100.1"),
    ("127.0.0.1", {"X-Real-IP": "not an address"}, "127.0.0.1"),
    ("127.0.0.1", {}, "127.0.0.1"),
])
def test_a_request_is_counted_against_its_socket_unless_a_trusted_proxy_names_the_client(peer, headers,
                                                                                         counted_as):
    assert client_address(peer, headers, TRUSTED) == counted_as


def test_a_proxy_on_another_machine_is_trusted_only_when_configured():
    configured = trusted_proxies({"KVVIZ_TRUSTED_PROXIES": "10.0.0.0/24, not-an-address 192.0.2.1"})
    assert client_address("10.0.0.5", {"X-Real-IP": "198.51.100.1"}, configured) == "198.51.100.1"
    assert client_address("192.0.2.1", {"X-Real-IP": "198.51.100.1"}, configured) == "198.51.100.1"
    assert client_address("10.0.1.5", {"X-Real-IP": "198.51.100.1"}, configured) == "10.0.1.5"
    assert client_address("10.0.0.5", {"X-Real-IP": "198.51.100.1"}, TRUSTED) == "10.0.0.5"


# -- through the lesson's Tornado routes ----------------------------------------------------------
@pytest.fixture
def routes(monkeypatch, tmp_path):
    monkeypatch.setenv("KVVIZ_RECORDINGS", "off")  # (no recording started by the import)
    monkeypatch.setenv("KVVIZ_CACHE", str(tmp_path / "cache"))  # (none ready: a question is a 503)
    from kvviz.serve import routes as module

    clock = Clock()
    monkeypatch.setattr(throttle, "LIVE", Buckets(rate=1.0, burst=2, clock=clock))
    monkeypatch.setattr(throttle, "HANDIN", Buckets(rate=1.0, burst=1, clock=clock))
    return module


def _ask(routes, requests: list[tuple[str, str, dict]]) -> list:
    """Each (method, path, headers) sent in turn to a server of the lesson's routes on loopback."""
    return fetch_all(routes.ROUTES, requests)


def test_a_live_question_past_the_burst_is_answered_429_with_retry_after_and_the_sentence(routes,
                                                                                          monkeypatch):
    computed = []
    ready = routes.cache_folder.ready
    monkeypatch.setattr(routes.cache_folder, "ready", lambda **kw: computed.append(1) or ready(**kw))
    got = _ask(routes, [("GET", "/lesson-live?node=radix", {})] * 3)
    assert [r.code for r in got] == [503, 503, 429]  # (503: no recording here, but it was asked)
    refused = got[2]
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["Content-Type"] == "application/json"
    answer = json.loads(refused.body)
    assert answer == {"ok": False, "message": throttle.SLOW_DOWN, "retry_after_s": 1}
    assert "faster than the server can answer" in answer["message"]
    assert len(computed) == 2  # the refused one reached nothing behind the limit


def test_behind_nginx_on_this_machine_each_address_it_names_has_its_own_bucket(routes):
    from_nginx = [("GET", "/lesson-live?node=radix", {"X-Real-IP": f"198.51.100.{i}"}) for i in (1, 1, 1, 2)]
    assert [r.code for r in _ask(routes, from_nginx)] == [503, 503, 429, 503]


def test_hand_ins_from_one_address_are_limited_too(routes):
    post = ("POST", "/lesson-handin", {"Content-Type": "application/json"})
    first, second = _ask(routes, [post, post])
    assert first.code == 400  # (an empty hand-in: read, refused for what it says)
    assert second.code == 429 and second.headers["Retry-After"] == "1"
    assert json.loads(second.body)["message"] == throttle.SLOW_DOWN_HANDIN
