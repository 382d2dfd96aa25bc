"""Bad input is refused with an exception a person can act on, and changes nothing.

"Changes nothing" is checked on the snapshot: blocks, requests, radix tree, metrics and events
before and after the failed call compare equal (the measured prefill time aside).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from engine import Engine, EngineConfig, ModelConfig


@pytest.fixture
def busy_engine(make_engine):
    """An engine with something in every state: a released request whose pages are cached, a
    finished one holding its KV, a running one and a waiting one (16 blocks of 4 tokens)."""
    engine = make_engine(block_size=4, num_blocks=16, prefix_sharing=True, max_running=1)
    released = engine.add_request("cached prefix", max_new_tokens=1)
    engine.step()
    engine.release(released)
    engine.add_request("finished", max_new_tokens=1)
    engine.add_request("running", max_new_tokens=30)
    engine.step()
    engine.add_request("waiting", max_new_tokens=3)
    engine.step()
    statuses = [r.status.value for r in engine.requests.values()]
    assert statuses == ["released", "finished", "running", "waiting"]
    return engine


def state(engine: Engine):
    snap = engine.snapshot()
    return snap.blocks, snap.requests, snap.radix, snap.metrics, snap.events


def assert_refused_unchanged(engine: Engine, call, exc_type, *words: str) -> None:
    before = state(engine)
    with pytest.raises(exc_type) as info:
        call()
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in the message {message!r}"
    assert state(engine) == before


@pytest.mark.parametrize("prompt", ["", b""], ids=["str", "bytes"])
def test_empty_prompt_is_refused(busy_engine, prompt):
    assert_refused_unchanged(
        busy_engine, lambda: busy_engine.add_request(prompt, 4), ValueError, "prompt is empty"
    )


def test_prompt_longer_than_the_context_is_refused(busy_engine):
    prompt = "x" * 256  # the small model's context is 256 tokens
    assert_refused_unchanged(
        busy_engine, lambda: busy_engine.add_request(prompt, 1), ValueError, "256 tokens", "context"
    )


def test_prompt_that_fills_the_context_is_refused_as_it_leaves_nothing_to_generate(make_engine):
    engine = make_engine(block_size=16, num_blocks=32)
    assert_refused_unchanged(
        engine, lambda: engine.add_request("x" * 256, 1), ValueError, "at least one must be left to generate"
    )
    assert engine.add_request("x" * 255, 1) == 1


def test_paged_request_that_could_never_fit_in_the_pool_is_refused(busy_engine):
    call = lambda: busy_engine.add_request("thirty bytes of a long prompt.", 50)  # noqa: E731
    assert_refused_unchanged(busy_engine, call, ValueError, "20 blocks", "whole pool has 16 blocks")


def test_contiguous_prompt_larger_than_the_pool_is_refused(make_engine):
    engine = make_engine(policy="contiguous", block_size=4, num_blocks=4, reserve_blocks=4)
    assert_refused_unchanged(
        engine, lambda: engine.add_request("seventeen bytes!!", 1), ValueError, "needs 5 blocks", "pool has 4"
    )


def test_invalid_utf8_bytes_are_refused(busy_engine):
    assert_refused_unchanged(
        busy_engine,
        lambda: busy_engine.add_request(b"ok \xff\xfe", 4),
        ValueError,
        "not valid UTF-8",
        "position 3",
    )


def test_text_with_a_lone_surrogate_is_refused(busy_engine):
    assert_refused_unchanged(
        busy_engine,
        lambda: busy_engine.add_request("ab\ud800", 4),
        ValueError,
        "not valid Unicode",
        "position 2",
    )


@pytest.mark.parametrize("prompt", [None, 42, ["a"]], ids=["None", "int", "list"])
def test_prompt_that_is_not_text_is_refused(busy_engine, prompt):
    assert_refused_unchanged(
        busy_engine, lambda: busy_engine.add_request(prompt, 4), TypeError, "must be text"
    )


@pytest.mark.parametrize("max_new", [0, -3, 2.5, "4", None, True], ids=repr)
def test_max_new_tokens_that_is_not_a_positive_whole_number_is_refused(busy_engine, max_new):
    assert_refused_unchanged(
        busy_engine,
        lambda: busy_engine.add_request("hi", max_new),
        ValueError,
        "max_new_tokens",
        repr(max_new),
    )


@pytest.mark.parametrize("reserve", [0, -1, 1.5, True], ids=repr)
def test_reserve_blocks_that_is_not_a_positive_whole_number_is_refused(make_engine, reserve):
    engine = make_engine(policy="contiguous", block_size=4, num_blocks=8)
    assert_refused_unchanged(
        engine, lambda: engine.add_request("hi", 2, reserve), ValueError, "reserve_blocks"
    )


def test_refused_input_does_not_use_up_a_request_id(busy_engine):
    with pytest.raises(ValueError):
        busy_engine.add_request("", 4)
    assert busy_engine.add_request("next", 4) == 5


@pytest.mark.parametrize("request_id", [999, 0, "2", None, 2.0], ids=repr)
def test_releasing_an_unknown_id_is_refused(busy_engine, request_id):
    assert_refused_unchanged(
        busy_engine,
        lambda: busy_engine.release(request_id),
        KeyError,
        "no request with id",
        "known ids: 1, 2, 3, 4",
    )


def test_releasing_by_a_bool_is_not_taken_for_request_one(busy_engine):
    assert_refused_unchanged(
        busy_engine, lambda: busy_engine.release(True), KeyError, "no request with id True"
    )


def test_releasing_twice_is_refused(busy_engine):
    busy_engine.release(2)
    assert_refused_unchanged(
        busy_engine, lambda: busy_engine.release(2), ValueError, "R2", "already released"
    )


def test_releasing_a_refused_request_is_refused(make_engine):
    engine = make_engine(block_size=4, num_blocks=2, admission="refuse")
    engine.add_request("four", 4)
    engine.add_request("eight by", 1)  # 2 blocks; R1 holds 1
    engine.step()
    assert engine.requests[2].status.value == "refused"
    assert_refused_unchanged(engine, lambda: engine.release(2), ValueError, "R2 is already refused")


def test_engine_config_from_dict_rejects_unknown_keys():
    with pytest.raises(
        TypeError, match=r"EngineConfig has no field\(s\) \['num_block'\]; known fields: .*num_blocks"
    ):
        EngineConfig.from_dict({"num_block": 8})


def test_engine_config_from_dict_rejects_unknown_model_keys():
    with pytest.raises(TypeError, match=r"ModelConfig has no field\(s\) \['layers'\]"):
        EngineConfig.from_dict({"model": {"layers": 2}})


def test_engine_config_from_dict_builds_the_nested_model_config():
    cfg = EngineConfig.from_dict({"num_blocks": 8, "weights": "random", "model": {"num_layers": 2}})
    assert (cfg.num_blocks, cfg.model) == (8, ModelConfig(num_layers=2))


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("policy", "pagd", "policy must be one of"),
        ("backend", "cuda-fast", "backend must be one of"),
        ("admission", "maybe", "admission must be one of"),
        ("weights", "pretrained", "weights must be one of"),
        ("device", "tpu", "device must be"),
        ("num_blocks", 0, "num_blocks must be >= 1"),
        ("block_size", 0, "block_size must be >= 1"),
        ("reserve_blocks", 0, "reserve_blocks must be >= 1"),
        ("max_running", 0, "max_running must be >= 1"),
    ],
)
def test_invalid_engine_config_value_is_refused(field, value, words):
    with pytest.raises(ValueError, match=words):
        EngineConfig(**{field: value})


def test_prefix_sharing_needs_the_paged_policy():
    with pytest.raises(ValueError, match="prefix_sharing needs policy='paged'"):
        EngineConfig(policy="contiguous", prefix_sharing=True)


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"d_model": 66, "num_heads": 4}, "divisible by num_heads"),
        ({"num_heads": 4, "num_kv_heads": 3}, "multiple of num_kv_heads"),
        ({"d_model": 12, "num_heads": 4, "num_kv_heads": 1}, "must be even for RoPE"),
        ({"num_layers": 0}, "num_layers must be >= 1"),
    ],
)
def test_invalid_model_config_is_refused(fields, words):
    with pytest.raises(ValueError, match=words):
        ModelConfig(**fields)


def test_configs_are_frozen():
    cfg = EngineConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.num_blocks = 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.model.num_layers = 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine with no CUDA")
def test_triton_backend_without_cuda_or_interpreter_is_refused(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="backend='triton' needs a CUDA device, or TRITON_INTERPRET=1"):
        Engine(EngineConfig(backend="triton", device="cpu"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine with no CUDA")
def test_cuda_device_without_cuda_is_refused():
    with pytest.raises(ValueError, match="torch sees no CUDA device"):
        Engine(EngineConfig(device="cuda"))


@pytest.mark.parametrize(
    "field, value",
    [("num_blocks", "8"), ("num_blocks", True), ("prefix_sharing", "no"), ("policy", 3), ("block_size", 4.0)],
)
def test_engine_config_fields_of_the_wrong_type_are_refused_by_name(field, value):
    with pytest.raises(TypeError, match=f"EngineConfig.{field} must be"):
        EngineConfig(**{field: value})


def test_contiguous_reservation_larger_than_the_pool_is_a_config_error():
    with pytest.raises(ValueError, match="reserve_blocks .* cannot exceed num_blocks"):
        EngineConfig(policy="contiguous", num_blocks=4, reserve_blocks=5)


def test_trained_weights_with_another_architecture_are_refused():
    with pytest.raises(ValueError, match="weights='trained' exist only for the default ModelConfig"):
        EngineConfig(model=ModelConfig(num_layers=2))
