"""vLLM's prefix cache, rebuilt from its KV events: which blocks it holds, and how they chain.

The tree is keyed by block hash. `BlockStored` adds blocks (each one's parent is the block
before it, the first one's is `parent_block_hash`); `BlockRemoved` drops evicted blocks;
`AllBlocksCleared` empties it. What the stream cannot say, the tree does not pretend to know:
there are no physical block ids and no per-request block tables in it, and a block that a
finished request let go of stays cached (and in this tree) until vLLM evicts it to reuse its
memory, which is the only time it is removed.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_watch.wire import (
    DEFAULT_HASH_SEED,
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    block_hashes,
)


@dataclass(frozen=True)
class CachedBlock:
    block_hash: int
    parent_hash: int | None  # None: the first block of a prompt
    tokens: tuple[int, ...]
    stored_seq: int  # the event batch that stored it


@dataclass(frozen=True)
class TreeView:
    """The tree at one moment (immutable): blocks in the order they were stored."""

    blocks: tuple[CachedBlock, ...]
    num_stored: int  # BlockStored blocks since the server started (or since this subscriber joined)
    num_removed: int  # BlockRemoved blocks, likewise: evictions
    num_cleared: int  # AllBlocksCleared events
    block_size: int | None  # from the events (None until one arrives)

    def by_hash(self) -> dict[int, CachedBlock]:
        return {b.block_hash: b for b in self.blocks}

    def prefix_tokens(self, block_hash: int) -> tuple[int, ...] | None:
        """Every token from the prompt's start to the end of this block, or None when an
        ancestor is not in the tree (evicted first, or stored before this subscriber joined)."""
        index, parts = self.by_hash(), list[tuple[int, ...]]()
        h: int | None = block_hash
        while h is not None:
            b = index.get(h)
            if b is None:
                return None
            parts.append(b.tokens)
            h = b.parent_hash
        return tuple(t for part in reversed(parts) for t in part)

    def hash_checked(self, block_hash: int, seed: str = DEFAULT_HASH_SEED) -> bool | None:
        """Whether vLLM's hash equals the one recomputed here from the block's whole prefix
        (None when the prefix is not all in the tree)."""
        tokens = self.prefix_tokens(block_hash)
        if tokens is None or not self.block_size:
            return None
        return block_hashes(tokens, self.block_size, seed)[-1] == block_hash


class CacheTree:
    """Mutable: apply event batches in sequence order; `view()` for an immutable picture."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._blocks: dict[int, CachedBlock] = {}
        self.num_stored = self.num_removed = self.num_cleared = 0
        self.block_size: int | None = None

    def apply(self, batch: EventBatch) -> None:
        for event in batch.events:
            if isinstance(event, BlockStored):
                self._store(event, batch.seq)
            elif isinstance(event, BlockRemoved):
                for h in event.block_hashes:
                    if self._blocks.pop(h, None) is not None:
                        self.num_removed += 1
            elif isinstance(event, AllBlocksCleared):
                self._blocks.clear()
                self.num_cleared += 1

    def _store(self, event: BlockStored, seq: int) -> None:
        bs, parent = event.block_size, event.parent_block_hash
        self.block_size = bs
        for i, h in enumerate(event.block_hashes):
            self._blocks.pop(h, None)  # (stored again after an eviction: it moves to the end)
            self._blocks[h] = CachedBlock(h, parent, event.token_ids[i * bs:(i + 1) * bs], seq)
            self.num_stored += 1
            parent = h

    def view(self) -> TreeView:
        return TreeView(tuple(self._blocks.values()), self.num_stored, self.num_removed, self.num_cleared,
                        self.block_size)
