"""RadixAttention's prefix cache: a token radix tree at page granularity.

Every edge holds a whole number of pages: `key` is its tokens (a multiple of block_size) and
`blocks` the physical blocks that store their KV, one per page. Only full blocks are ever in
the tree, so a shared block is never written again (no copy-on-write needed).

Ownership: the tree holds one ref on every block it lists. A request that uses a path locks
its deepest node; `lock_ref` of a node is the number of requests locking it or a descendant.
Only unlocked leaves are evicted, least recently used first.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.block_pool import BlockPool


@dataclass(eq=False)
class RadixNode:
    node_id: int
    key: tuple[int, ...] = ()
    blocks: list[int] = field(default_factory=list)
    parent: RadixNode | None = None
    children: dict[tuple[int, ...], RadixNode] = field(default_factory=dict)  # first page -> child
    lock_ref: int = 0
    last_access: int = 0

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def up(self) -> RadixNode:
        """The parent of any node but the root."""
        assert self.parent is not None, f"radix node {self.node_id} is the root: it has no parent"
        return self.parent


@dataclass(frozen=True)
class MatchResult:
    """The cached prefix of a token sequence: `num_tokens` tokens in `blocks`, ending at `node`."""

    blocks: tuple[int, ...]
    num_tokens: int
    node: RadixNode


@dataclass(frozen=True)
class InsertResult:
    node: RadixNode  # the deepest node of the inserted path
    num_existing: int  # leading tokens that were already in the tree (their blocks were not added)


class RadixCache:
    def __init__(self, pool: BlockPool):
        self.pool = pool
        self.block_size = pool.block_size
        self._clock = 0
        self._next_id = 1
        self.root = RadixNode(node_id=0)

    def reset(self) -> None:
        self._clock = 0
        self._next_id = 1
        self.root = RadixNode(node_id=0)

    def _page(self, tokens: Sequence[int], i: int) -> tuple[int, ...]:
        return tuple(tokens[i * self.block_size : (i + 1) * self.block_size])

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    def match_prefix(self, tokens: Sequence[int]) -> MatchResult:
        """Longest cached prefix of `tokens`, in whole pages.

        Splits a node when the match ends inside it, so the result always ends at a node
        boundary. Touches the path (LRU). Locks nothing: call `lock` before the blocks may be
        evicted, i.e. before anything else is allocated.

        An edge is compared whole (one tuple comparison, in C), page by page only where it
        differs: a 512-token prefix is one dictionary lookup and one comparison, not 32 pages.
        """
        now = self._tick()
        bs = self.block_size
        num_pages = len(tokens) // bs
        ids = tuple(tokens[: num_pages * bs])
        node = self.root
        blocks: list[int] = []
        page = 0
        while page < num_pages:
            start = page * bs
            child = node.children.get(ids[start : start + bs])
            if child is None:
                break
            same = min(len(child.blocks), num_pages - page)
            if child.key[: same * bs] != ids[start : start + same * bs]:
                same = next(i for i in range(1, same)
                            if child.key[i * bs : (i + 1) * bs] != ids[start + i * bs : start + (i + 1) * bs])
            if same < len(child.blocks):
                child = self._split(child, same)
            child.last_access = now
            blocks.extend(child.blocks)
            page += same
            node = child
        return MatchResult(tuple(blocks), len(blocks) * bs, node)

    def _split(self, node: RadixNode, num_pages: int) -> RadixNode:
        """Cut `node` after `num_pages` pages; returns the new upper part (which keeps the locks)."""
        cut = num_pages * self.block_size
        upper = RadixNode(
            self._new_id(), node.key[:cut], node.blocks[:num_pages], node.parent, {}, node.lock_ref,
            node.last_access
        )
        node.up.children[self._page(upper.key, 0)] = upper
        node.key, node.blocks, node.parent = node.key[cut:], node.blocks[num_pages:], upper
        upper.children[self._page(node.key, 0)] = node
        return upper

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def insert(self, tokens: Sequence[int], blocks: Sequence[int]) -> InsertResult:
        """Add the full pages of `tokens` (KV in `blocks`, one per page) to the tree.

        Pages already cached keep the tree's blocks; the caller's duplicates for them are not
        taken. The tree takes one ref on each block it adds.
        """
        num_pages = min(len(tokens) // self.block_size, len(blocks))
        tokens = tokens[: num_pages * self.block_size]
        match = self.match_prefix(tokens)
        node, have = match.node, len(match.blocks)
        if have < num_pages:
            new_blocks = list(blocks[have:num_pages])
            child = RadixNode(self._new_id(), tuple(tokens[have * self.block_size :]), new_blocks, node)
            child.last_access = self._tick()
            node.children[self._page(child.key, 0)] = child
            self.pool.incref_all(new_blocks)
            node = child
        return InsertResult(node, match.num_tokens)

    def lock(self, node: RadixNode | None) -> None:
        while node is not None and node is not self.root:
            node.lock_ref += 1
            node = node.parent

    def unlock(self, node: RadixNode | None) -> None:
        while node is not None and node is not self.root:
            assert node.lock_ref > 0, f"unlock of unlocked radix node {node.node_id}"
            node.lock_ref -= 1
            node = node.parent

    def nodes(self) -> list[RadixNode]:
        """Every node but the root, parents before children."""
        out: list[RadixNode] = []
        stack = list(self.root.children.values())
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(n.children.values())
        return sorted(out, key=lambda n: n.node_id)

    @property
    def num_evictable_blocks(self) -> int:
        """Blocks that eviction could free now: in unlocked subtrees, held by nothing but the tree."""
        return sum(len(n.blocks) for n in self.nodes() if n.lock_ref == 0)

    def evict(self, num_blocks: int) -> list[int]:
        """Evict unlocked leaves, least recently used first, until `num_blocks` blocks are freed
        (or nothing more is evictable). Returns the freed blocks."""
        heap = [(n.last_access, n.node_id, n) for n in self.nodes() if n.is_leaf and n.lock_ref == 0]
        heapq.heapify(heap)
        freed: list[int] = []
        while heap and len(freed) < num_blocks:
            _, _, leaf = heapq.heappop(heap)
            parent = leaf.up
            del parent.children[self._page(leaf.key, 0)]
            freed += self.pool.decref(leaf.blocks, None,
                                      "evicted from the prefix cache (least recently used)")
            self.pool.log.emit("block_evicted", None, leaf.blocks, "least recently used cached prefix")
            if parent is not self.root and parent.is_leaf and parent.lock_ref == 0:
                heapq.heappush(heap, (parent.last_access, parent.node_id, parent))
        return freed

    def check_integrity(self, locks_held: dict[int, int] | None = None) -> None:
        """Keys are whole pages matching their blocks; children keyed by their first page; the
        tree holds each block once; optionally lock_ref equals the requests locking each subtree."""
        seen: set[int] = set()
        for n in self.nodes():
            assert len(n.key) == len(n.blocks) * self.block_size and n.blocks, (
                f"node {n.node_id} is not whole pages")
            assert n.up.children.get(self._page(n.key, 0)) is n, f"node {n.node_id} mis-keyed in its parent"
            assert n.lock_ref >= 0
            for i, b in enumerate(n.blocks):
                assert b not in seen, f"block {b} appears twice in the radix tree"
                seen.add(b)
                assert self.pool.ref_count[b] >= 1, f"radix block {b} is free"
                assert tuple(self.pool.tokens[b]) == self._page(n.key, i), f"block {b} stores other tokens"
        if locks_held is not None:
            for n in self.nodes():
                below = [n]
                total = 0
                while below:
                    m = below.pop()
                    total += locks_held.get(m.node_id, 0)
                    below.extend(m.children.values())
                assert n.lock_ref == total, f"node {n.node_id}: lock_ref {n.lock_ref} but {total} locks below"

    def block_ids(self) -> set[int]:
        return {b for n in self.nodes() for b in n.blocks}
