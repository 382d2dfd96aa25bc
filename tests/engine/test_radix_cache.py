"""The radix prefix cache: page-aligned matching, splits, insertion of full pages, LRU eviction."""

from __future__ import annotations

import pytest

from engine.block_pool import BlockPool
from engine.events import EventLog
from engine.radix_cache import RadixCache

BS = 4


@pytest.fixture
def cache() -> RadixCache:
    return RadixCache(BlockPool(num_blocks=16, block_size=BS, log=EventLog()))


def ids(text: str) -> list[int]:
    return list(text.encode())


def cache_text(cache: RadixCache, text: str) -> list[int]:
    """Compute `text` into fresh blocks (one per full page), insert it, and let the caller's hold
    go, as a finished request does: afterwards the tree is the only holder. Returns its blocks."""
    tokens = ids(text)
    blocks = []
    for page in range(len(tokens) // BS):
        b = cache.pool.allocate(None, page)
        cache.pool.tokens[b] = tokens[page * BS : (page + 1) * BS]
        blocks.append(b)
    cache.insert(tokens, blocks)
    cache.pool.decref(blocks)
    return blocks


def keys(cache: RadixCache) -> list[str]:
    return [bytes(n.key).decode() for n in cache.nodes()]


def test_match_covers_only_whole_pages(cache):
    blocks = cache_text(cache, "abcdefgh")
    assert cache.match_prefix(ids("abcdef")).num_tokens == 4  # the match ends mid-page: page 2 is not used
    assert cache.match_prefix(ids("abcdef")).blocks == (blocks[0],)
    assert cache.match_prefix(ids("abcdefghij")).num_tokens == 8
    assert cache.match_prefix(ids("abcXefgh")).num_tokens == 0


def test_match_ending_inside_a_node_splits_it(cache):
    blocks = cache_text(cache, "abcdefghijkl")
    assert keys(cache) == ["abcdefghijkl"]
    match = cache.match_prefix(ids("abcdefghXXXX"))
    assert match.num_tokens == 8
    assert sorted(keys(cache)) == ["abcdefgh", "ijkl"]
    upper, lower = sorted(cache.nodes(), key=lambda n: len(n.key), reverse=True)
    assert (bytes(upper.key), upper.blocks) == (b"abcdefgh", blocks[:2])
    assert (bytes(lower.key), lower.blocks, lower.parent) == (b"ijkl", blocks[2:], upper)
    assert match.node is upper
    cache.check_integrity()


def test_split_keeps_the_lock_on_both_parts(cache):
    cache_text(cache, "abcdefghijkl")
    (node,) = cache.nodes()
    cache.lock(node)
    upper = cache.match_prefix(ids("abcdXXXX")).node
    assert (upper.lock_ref, node.lock_ref) == (1, 1)
    cache.unlock(node)
    assert (upper.lock_ref, node.lock_ref) == (0, 0)


def test_insert_takes_only_full_pages(cache):
    tokens = ids("abcdefghij")  # two full pages and two tokens of a third
    blocks = [cache.pool.allocate(1, p) for p in range(3)]
    for p, b in enumerate(blocks):
        cache.pool.tokens[b] = tokens[p * BS : (p + 1) * BS]
    cache.insert(tokens, blocks)
    assert cache.block_ids() == set(blocks[:2])
    assert [cache.pool.ref_count[b] for b in blocks] == [2, 2, 1]


def test_insert_keeps_the_tree_blocks_for_pages_already_cached(cache):
    first = cache_text(cache, "abcdefgh")
    tokens = ids("abcdefghijkl")
    second = []
    for page in range(3):
        b = cache.pool.allocate(2, page)
        cache.pool.tokens[b] = tokens[page * BS : (page + 1) * BS]
        second.append(b)
    result = cache.insert(tokens, second)
    assert result.num_existing == 8
    assert cache.block_ids() == {*first, second[2]}
    assert [cache.pool.ref_count[b] for b in second] == [1, 1, 2]
    cache.check_integrity()


def test_eviction_frees_the_least_recently_used_leaf_first(cache):
    a = cache_text(cache, "aaaa")
    b = cache_text(cache, "bbbb")
    c = cache_text(cache, "cccc")
    cache.match_prefix(ids("aaaa"))  # touch A: B is now the oldest untouched leaf
    assert cache.evict(1) == b
    assert cache.evict(1) == c
    assert cache.evict(1) == a


def test_eviction_frees_whole_leaves_until_enough_blocks_are_free(cache):
    old = cache_text(cache, "aaaabbbb")
    cache_text(cache, "cccc")
    assert cache.evict(1) == old  # the leaf holds two blocks; both go
    assert keys(cache) == ["cccc"]


def test_locked_nodes_are_never_evicted(cache):
    locked = cache_text(cache, "aaaa")
    idle = cache_text(cache, "bbbb")
    (node,) = (n for n in cache.nodes() if n.blocks == locked)
    cache.lock(node)
    assert cache.evict(10) == idle
    assert keys(cache) == ["aaaa"]
    assert cache.pool.ref_count[locked[0]] == 1


def test_a_locked_leaf_protects_its_ancestors(cache):
    cache_text(cache, "aaaabbbb")
    cache_text(cache, "aaaacccc")  # splits: aaaa -> {bbbb, cccc}
    (leaf,) = (n for n in cache.nodes() if bytes(n.key) == b"bbbb")
    cache.lock(leaf)
    cache.evict(10)
    assert sorted(keys(cache)) == ["aaaa", "bbbb"]


def test_evicting_the_last_child_makes_its_parent_evictable(cache):
    cache_text(cache, "aaaabbbb")
    cache_text(cache, "aaaacccc")
    assert len(cache.evict(3)) == 3
    assert cache.nodes() == []
    assert cache.pool.num_free == 16


def test_evict_stops_when_nothing_more_is_evictable(cache):
    cache_text(cache, "aaaa")
    cache_text(cache, "bbbb")
    assert len(cache.evict(5)) == 2


def test_evictable_blocks_exclude_locked_paths(cache):
    cache_text(cache, "aaaabbbb")
    cache_text(cache, "cccc")
    (node,) = (n for n in cache.nodes() if bytes(n.key) == b"cccc")
    cache.lock(node)
    assert cache.num_evictable_blocks == 2


def test_eviction_is_logged_with_a_reason(cache):
    blocks = cache_text(cache, "aaaa")
    cache.evict(1)
    (event,) = (e for e in cache.pool.log.events if e.kind == "block_evicted")
    assert event.blocks == tuple(blocks)
    assert "least recently used" in event.reason


@pytest.mark.parametrize("block_size, prompt", [(1, "cached"), (4, "nine byte")])
def test_fully_matched_prompt_still_recomputes_its_last_token(make_engine, drain, block_size, prompt):
    engine = make_engine(block_size=block_size, num_blocks=32, prefix_sharing=True)
    first = engine.add_request(prompt, max_new_tokens=4)
    drain(engine)
    engine.release(first)
    before = engine.snapshot().metrics
    second = engine.add_request(prompt, max_new_tokens=4)
    drain(engine)
    after = engine.snapshot()
    view = after.request(second)
    assert view.num_cached == len(prompt) - 1 < view.num_prompt_tokens
    assert after.metrics.prefill_tokens_computed - before.prefill_tokens_computed == 1
    assert after.metrics.prefix_hit_tokens - before.prefix_hit_tokens == len(prompt) - 1


def test_a_block_shared_by_two_requests_counts_both_and_the_tree(make_engine, drain):
    engine = make_engine(block_size=4, num_blocks=32, prefix_sharing=True)
    a = engine.add_request("same prefix, then A", max_new_tokens=2)
    b = engine.add_request("same prefix, then B", max_new_tokens=2)
    drain(engine)
    snap = engine.snapshot()
    shared = set(snap.request(a).block_table) & set(snap.request(b).block_table)
    assert len(shared) == 4  # "same prefix, then " is 18 bytes: 4 full pages in common
    assert all(snap.blocks[blk].ref_count == 3 for blk in shared)
    assert all(snap.blocks[blk].owners == (a, b) for blk in shared)
