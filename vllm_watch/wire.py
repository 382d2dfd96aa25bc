"""What vLLM publishes about its prefix cache, decoded: KV events and block hashes.

vLLM (`--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq", ...}'`) sends one
ZeroMQ message of three frames each time its engine steps with cache changes:

    topic        bytes (the configured topic, '' by default)
    sequence     8 bytes, big-endian: 0, 1, 2, ... since the server started
    payload      msgpack of [timestamp, [event, ...], data_parallel_rank]

Each event is `BlockStored` (full blocks just cached: their hashes, their parent's hash, their
tokens), `BlockRemoved` (hashes evicted from the cache) or `AllBlocksCleared`. vLLM 0.32 encodes
an event as a map with a "type" key; older releases as an array, tag first. Both are accepted and
unknown fields are ignored, so a newer vLLM that adds fields still decodes.

A block's hash chains its parent's hash and its own tokens, so it names the whole prefix up to
and including the block: `sha256(pickle((parent or NONE_HASH, tokens, extra_keys)))`, where
NONE_HASH is the sha256 of the pickled seed ("vllm-none-hash", or $PYTHONHASHSEED when the
server sets it). The wire carries the low 64 bits. `block_hashes` recomputes them in Python.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

DEFAULT_HASH_SEED = "vllm-none-hash"
_STORED_FIELDS = ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium")
_REMOVED_FIELDS = ("block_hashes", "medium")


@dataclass(frozen=True)
class BlockStored:
    block_hashes: tuple[int, ...]  # one per stored block, in prefix order
    parent_block_hash: int | None  # the block before the first one (None: it starts a prompt)
    token_ids: tuple[int, ...]  # block_size tokens per block, concatenated
    block_size: int
    medium: str | None = None  # "GPU" (the engine's own pool; vLLM says GPU on CPUs too), "CPU", …


@dataclass(frozen=True)
class BlockRemoved:
    block_hashes: tuple[int, ...]
    medium: str | None = None


@dataclass(frozen=True)
class AllBlocksCleared:
    pass


Event = BlockStored | BlockRemoved | AllBlocksCleared


@dataclass(frozen=True)
class EventBatch:
    seq: int
    ts: float
    events: tuple[Event, ...]
    dp_rank: int | None = None


def wire_hash(h: object) -> int:
    """A block hash as an int: vLLM sends the low 64 bits as an int (the default) or the whole
    32-byte digest as bytes (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0); both become the low 64 bits."""
    if isinstance(h, bytes | bytearray):
        return int.from_bytes(h, "big") & ((1 << 64) - 1)
    if isinstance(h, int) and not isinstance(h, bool):
        return h
    raise ValueError(f"a block hash must be an int or bytes, got {type(h).__name__}")


def _fields(raw: Any, names: tuple[str, ...]) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    return dict(zip(names, raw[1:], strict=False))  # array form: [tag, field, field, ...]


def decode_event(raw: Any) -> Event | None:
    """One event (map or array form, as msgpack decoded it); None for an event type not known here."""
    kind = raw.get("type") if isinstance(raw, dict) else (raw[0] if raw else None)
    if kind == "BlockStored":
        f = _fields(raw, _STORED_FIELDS)
        parent = f.get("parent_block_hash")
        return BlockStored(tuple(wire_hash(h) for h in f["block_hashes"]),
                           None if parent is None else wire_hash(parent),
                           tuple(int(t) for t in f["token_ids"]), int(f["block_size"]),
                           f.get("medium"))
    if kind == "BlockRemoved":
        f = _fields(raw, _REMOVED_FIELDS)
        return BlockRemoved(tuple(wire_hash(h) for h in f["block_hashes"]), f.get("medium"))
    if kind == "AllBlocksCleared":
        return AllBlocksCleared()
    return None


def decode_frames(frames: list[bytes]) -> EventBatch:
    """One published message (topic, sequence, payload) -> EventBatch. Raises ValueError on a
    message that is not one."""
    if len(frames) != 3 or len(frames[1]) != 8:
        raise ValueError("a KV-event message has 3 frames (topic, 8-byte sequence, payload), "
                         f"got {len(frames)}")
    seq = int.from_bytes(frames[1], "big", signed=True)
    try:
        body: Any = msgspec.msgpack.decode(frames[2])
        ts, raw_events = body[0], body[1]
        dp_rank = body[2] if len(body) > 2 else None
        events = tuple(e for e in (decode_event(r) for r in raw_events) if e is not None)
    except (msgspec.DecodeError, IndexError, KeyError, TypeError) as e:
        raise ValueError(f"KV-event batch {seq} does not decode: {e}") from None
    return EventBatch(seq, float(ts), events, dp_rank)


def none_hash(seed: str = DEFAULT_HASH_SEED) -> bytes:
    """The parent hash vLLM gives a prompt's first block."""
    return hashlib.sha256(pickle.dumps(seed, protocol=pickle.HIGHEST_PROTOCOL)).digest()


def block_hashes(tokens: Sequence[int], block_size: int, seed: str = DEFAULT_HASH_SEED) -> list[int]:
    """vLLM's wire hash of each full block of `tokens` (sha256 prefix caching, no LoRA, no
    multimodal input, no cache salt), as vLLM 0.32's `hash_block_tokens` chains them."""
    parent, out = none_hash(seed), list[int]()
    for i in range(len(tokens) // block_size):
        page = tuple(int(t) for t in tokens[i * block_size:(i + 1) * block_size])
        parent = hashlib.sha256(pickle.dumps((parent, page, None), protocol=pickle.HIGHEST_PROTOCOL)).digest()
        out.append(wire_hash(parent))
    return out
