"""What every room of the tests shares (each room, tests/<room>/, has its own conftest too):
an engine over a small model, hostile text, the class database on both stores, the nodes'
states, the static site, and how the tests are grouped under pytest-xdist.

Tests about cache logic use a small model (`SMALL_MODEL`) on CPU with the torch backend: the
blocks, ref counts and tokens they check do not depend on the model's size, and it is fast.
"""

from __future__ import annotations

import pytest
import torch

from engine import Engine, EngineConfig, ModelConfig

# The models here are tiny: one intra-op thread is faster than two, and much faster on a shared,
# busy machine, where a second OpenMP thread waits on a core that someone else is using.
torch.set_num_threads(1)

# Text that would run script if any view rendered it as HTML: every test that shows user text uses it.
HOSTILE = "<img src=x onerror=alert(1)>"

SMALL_MODEL = ModelConfig(num_layers=2, d_model=64, num_heads=4, num_kv_heads=2, d_ff=128, max_seq_len=256)


def small_config(**overrides) -> EngineConfig:
    """An EngineConfig over SMALL_MODEL, torch backend on CPU; `overrides` are EngineConfig fields."""
    return EngineConfig(
        **{"model": SMALL_MODEL, "weights": "random", "backend": "torch", "device": "cpu", **overrides}
    )


@pytest.fixture
def make_config():
    """make_config(**EngineConfig fields) -> small_config(...)."""
    return small_config


@pytest.fixture
def make_engine():
    """make_engine(**EngineConfig fields) -> an Engine over the small model (see small_config)."""
    return lambda **overrides: Engine(small_config(**overrides))


@pytest.fixture
def hostile() -> str:
    """Text that would run script if anything rendered it as HTML (HOSTILE)."""
    return HOSTILE


# -- the class database: a SQLite file, or a database on a throwaway PostgreSQL (postgres_support.py)
@pytest.fixture(scope="session")
def postgres():
    """The test session's PostgreSQL cluster (started on first use, removed at the end)."""
    import postgres_support

    cluster = postgres_support.cluster()
    yield cluster
    cluster.remove()


@pytest.fixture
def postgres_db(postgres):
    """A new, empty database on the session's PostgreSQL (dropped after the test): its name."""
    name = postgres.create_database()
    yield name
    postgres.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def class_db(request, tmp_path) -> str:
    """Where a test's Store keeps the class: a new SQLite file, or a new PostgreSQL database (URL)."""
    if request.param == "sqlite":
        return str(tmp_path / "class.db")
    return request.getfixturevalue("postgres").url(request.getfixturevalue("postgres_db"))


# -- the lesson's node states (tests/test_kvviz_*.py) ----------------------------------------
@pytest.fixture
def frag():
    from kvviz.nodes.fragmentation.state import FragmentationState

    return FragmentationState()


@pytest.fixture
def paging():
    from kvviz.nodes.paging.state import PagingState

    return PagingState()


@pytest.fixture
def radix():
    from kvviz.nodes.radix.state import RadixState

    return RadixState()


# -- the static export (tests/export/test_export.py, tests/ui/test_export_static.py) ------------------
@pytest.fixture(scope="session")
def static_site(tmp_path_factory):
    """The lesson exported once per test session (python -m kvviz.export): its folder. Its nodes
    01-03 are recorded from the walks of this code's served recording (kvviz/export/cache.py,
    which the served lesson's tests need too: made here, or by a test server's recorder, once),
    as `export(walked=walks(...))` does: the same walk, not a second one; and Explain it back's
    self-checks are the served recording's (`recorded_checks`), not run on the engine again."""
    from kvviz.export import cache
    from kvviz.export.reuse import recorded_checks, walks
    from kvviz.export.site import export

    out, served = tmp_path_factory.mktemp("site"), cache.make()
    export(out, walked=walks(served), explained=recorded_checks(served))
    return out


@pytest.hookimpl(tryfirst=True)  # (before xdist's own, which reads the groups off the markers)
def pytest_collection_modifyitems(items):
    """Under pytest-xdist (make test: a worker per core and one more, `--dist loadgroup`), the
    tests of one module run in one worker, so that a module's own server, class or benchmark run
    (a module-scoped fixture: tens of seconds for some) starts once, not once in each worker; and
    every test of the session's one exported site runs in one worker, which exports it once."""
    for item in items:
        if "static_site" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("static_site"))
        elif item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


# The groups that take longest (a quarter of a minute or more of a worker's time each, measured
# with --durations in a fresh clone, 3 workers, 2026-12-06), queued first, longest first, so that
# the workers finish together; the others follow, those with more tests first (pytest-xdist's own
# order, which make test's --no-loadscope-reorder leaves to this list): a long group of few tests
# (a one-test module, mypy's) is named here, or it would be queued among the last and leave one
# worker running it alone. static_site makes the served recording first when make test's setup
# has not; the groups that play it follow.
LONGEST_GROUPS = ("static_site", "vllm", "test_accessibility", "test_app", "test_played",
                  "test_played_whole_lesson", "test_classroom_smoke", "test_layers", "test_phone",
                  "test_fidelity", "test_page_details_played", "test_walk", "test_class_roster_played",
                  "test_handin", "test_notebook_played", "test_handin_class", "test_vllm_recorded",
                  "test_live_frames", "test_connection", "test_parity", "test_vllm_reconnect",
                  "test_lecture_hall", "test_hf_export", "test_typing")


class _LongestFirst:
    """Under `--dist loadgroup`, the tests in the order of their groups' (LONGEST_GROUPS, then
    the groups' sizes): pytest-xdist queues the groups as their first tests come. Last: after
    pytest has put the browser tests (a session-scoped parametrized fixture) together."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if not getattr(config.option, "loadgroup", False):  # (set in xdist's workers, whose `dist` is "no")
            return
        groups: dict[str, list] = {}  # group -> its tests, in the order collected
        for item in items:
            marker = item.get_closest_marker("xdist_group")
            groups.setdefault(marker.kwargs.get("name", marker.args[0] if marker.args else ""),
                              []).append(item)
        rank = {g: i for i, g in enumerate(LONGEST_GROUPS)}
        order = sorted(groups, key=lambda g: (rank.get(g, len(rank)), -len(groups[g])))
        items[:] = [item for g in order for item in groups[g]]


class _GroupsHeld:
    """In an xdist worker under `--dist loadgroup`, every test's id must carry its group (xdist
    appends it): if a pytest and pytest-xdist pairing stops doing so, say it, instead of
    silently running every module's servers in both workers (pytest 9 with xdist 3.8 did)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if getattr(config.option, "loadgroup", False) and items and "@" not in items[0].nodeid:
            raise pytest.UsageError("pytest-xdist's --dist loadgroup ignored the test groups with this "
                                    "pytest: install requirements-test.txt's versions")


def pytest_configure(config):
    config.pluginmanager.register(_GroupsHeld(), "kvviz-groups-held")
    config.pluginmanager.register(_LongestFirst(), "kvviz-longest-first")


@pytest.fixture(autouse=True)
def fresh_memo():
    """Each test starts with an empty process-wide timeline memo (kvviz/timeline.py), so a test
    that compares a replay with the engine really runs the engine."""
    from kvviz.timeline import MEMO

    MEMO.clear()
    yield MEMO


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Each test ends with torch on one intra-op thread, as this file sets it: one left on two
    (tools/train.py's recipe once did) makes every later torch test of its xdist worker wait on
    a second OpenMP thread beside the other worker (test_timeline's 1 s test took 51 s so)."""
    yield
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
