"""The watcher's decoding (vllm_watch/wire.py, cache_tree.py, metrics.py): vLLM's KV events and
metrics, decoded from messages a real vLLM sent (tests/fixtures/vllm, recorded with record.py
there; the file names the vLLM version) and from hand-made variants: no server needed. That
those tokens and hashes are our engine's is node 04's test (tests/vllm/test_vllm_view.py)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from vllm_watch.cache_tree import CacheTree
from vllm_watch.metrics import parse_metrics
from vllm_watch.wire import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    block_hashes,
    decode_event,
    decode_frames,
    wire_hash,
)

RECORDED = json.loads((Path(__file__).parents[1] / "fixtures" / "vllm" / "frames.json").read_text())
FRAMES = [[bytes.fromhex(f) for f in msg] for msg in RECORDED["frames"]]
BS = RECORDED["block_size"]


def recorded_tree() -> CacheTree:
    tree = CacheTree()
    for frames in FRAMES:
        tree.apply(decode_frames(frames))
    return tree


def test_recorded_messages_decode_in_sequence():
    assert RECORDED["vllm_version"] == "0.32.0"
    batches = [decode_frames(f) for f in FRAMES]
    assert [b.seq for b in batches] == list(range(len(batches)))
    events = [e for b in batches for e in b.events]
    assert events and all(isinstance(e, BlockStored) for e in events)
    assert all(e.block_size == BS and len(e.token_ids) == BS * len(e.block_hashes) for e in events)
    assert {b.dp_rank for b in batches} == {0}


def test_tree_rebuilt_for_three_requests_sharing_the_system_prompt():
    view = recorded_tree().view()
    roots = [b for b in view.blocks if b.parent_hash is None]
    assert len(roots) == 1  # one copy of the system prompt's first block
    trunk = [roots[0]]
    children = {}
    for b in view.blocks:
        children.setdefault(b.parent_hash, []).append(b)
    while len(children.get(trunk[-1].block_hash, [])) == 1:
        trunk.append(children[trunk[-1].block_hash][0])
    assert len(trunk) == 3  # the 96-token system prompt: 3 blocks of 32, stored once
    assert len(children[trunk[-1].block_hash]) == 3  # one branch per question
    assert all(view.hash_checked(b.block_hash) for b in view.blocks)  # hashes recomputed in Python


def test_block_hashes_recomputed_from_a_branchs_tokens_are_the_hashes_on_its_path():
    view = recorded_tree().view()
    by_hash, leaf = view.by_hash(), view.blocks[-1].block_hash
    path, h = [], leaf
    while h is not None:
        path.append(h)
        h = by_hash[h].parent_hash
    assert block_hashes(view.prefix_tokens(leaf), BS) == path[::-1]


def test_array_encoded_events_and_unknown_fields_decode():
    stored = decode_event(["BlockStored", [1, 2], None, list(range(4)), 2, None, "GPU", "later-field"])
    assert stored == BlockStored((1, 2), None, (0, 1, 2, 3), 2, "GPU")
    mapped = decode_event({"type": "BlockStored", "block_hashes": [3], "parent_block_hash": 2,
                           "token_ids": [7, 8], "block_size": 2, "a_field_from_the_future": {"x": 1}})
    assert mapped == BlockStored((3,), 2, (7, 8), 2)
    assert decode_event(["BlockRemoved", [1], "GPU"]) == BlockRemoved((1,), "GPU")
    assert decode_event({"type": "AllBlocksCleared"}) == AllBlocksCleared()
    assert decode_event({"type": "SomethingNew"}) is None


def test_byte_hashes_are_cut_to_their_low_64_bits():
    digest = bytes(range(32))
    assert wire_hash(digest) == int.from_bytes(digest[-8:], "big")
    with pytest.raises(ValueError):
        wire_hash("abc")


def test_removed_and_cleared_blocks_leave_the_tree():
    tree = recorded_tree()
    n = len(tree.view().blocks)
    leaf = tree.view().blocks[-1].block_hash
    removed = {"type": "BlockRemoved", "block_hashes": [leaf, 12345], "medium": "GPU"}
    payload = msgspec.msgpack.encode([1.0, [removed], 0])
    tree.apply(decode_frames([b"", (99).to_bytes(8, "big"), payload]))
    assert len(tree.view().blocks) == n - 1 and tree.view().num_removed == 1
    cleared = msgspec.msgpack.encode([1.0, [["AllBlocksCleared"]], 0])
    tree.apply(decode_frames([b"", (100).to_bytes(8, "big"), cleared]))
    assert tree.view().blocks == () and tree.view().num_cleared == 1


@pytest.mark.parametrize("frames", [[b"", b"\x00" * 8], [b"", b"\x00", b"\x90"], [b"", b"\x00" * 8, b"\xc1"]])
def test_malformed_messages_are_refused_with_a_reason(frames):
    with pytest.raises(ValueError):
        decode_frames(frames)


def test_recorded_metrics_parse():
    m = parse_metrics(RECORDED["metrics"])
    assert (m.num_blocks, m.block_size, m.hash_algo) == (64, 32, "sha256")
    assert m.prefix_hits == 192 and m.prefix_queries > m.prefix_hits  # 2 × 96 prompt tokens found cached
    assert m.kv_usage == 0.0 and m.running == 0 and m.waiting == 0 and m.preemptions == 0
    assert m.start_time and 0 < m.hit_rate < 1
