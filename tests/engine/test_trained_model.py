"""The trained weights in assets/: they load, the manifest vouches for them, and they write text."""

from __future__ import annotations

import shutil
import string

import pytest
import torch

from engine.config import ModelConfig
from engine.model import Transformer
from engine.weights import (
    DEFAULT_WEIGHTS_PATH,
    file_sha256,
    load_trained_state_dict,
    manifest_path,
    read_manifest,
    trained_model_config,
)
from tools.train import QUICK, TrainConfig, load_documents, split_documents, train

# The lesson's shared system prompt (96 bytes: six blocks of 16 tokens) and its prompts.
SYSTEM_PROMPT = (
    "You are a patient teacher. Explain how computers use memory, caches and pages, in plain words.\n\n"
)
LESSON_QUESTIONS = [
    "Q: What is a KV cache?\nA:",
    "Q: What is attention?\nA:",
    "Q: What is a token?\nA:",
    "Q: What is preemption?\nA:",
]
LESSON_PROMPTS = [SYSTEM_PROMPT + q for q in LESSON_QUESTIONS] + [
    "Free memory is broken into",
    "A good system spends its memory on",
    "Without a cache, the model would",
    "Memory is",
    "The librarian",
    "The desk",
    "Each token",
    "The engine",
    "The queue",
]

# After retraining, regenerate with greedy(model, FIXED_PROMPT, 24). On these weights the smallest
# gap between the top two logits along this path is 0.94, so float noise cannot flip it.
FIXED_PROMPT = SYSTEM_PROMPT + "Q: What is a KV cache?\nA:"
EXPECTED_GREEDY = " It is the memory where "

PLAIN_BYTES = set((string.ascii_letters + string.digits + " .,;:'\"!?-()\n").encode())


def greedy(model: Transformer, prompt: str, num_bytes: int) -> str:
    ids = list(prompt.encode())
    for _ in range(num_bytes):
        ids.append(int(model.forward_full(ids)[-1].argmax()))
    return bytes(ids[len(prompt.encode()) :]).decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def model() -> Transformer:
    m = Transformer(ModelConfig())
    m.load_state_dict(load_trained_state_dict())
    return m.eval()


def test_manifest_hash_matches_weights_file():
    assert read_manifest()["weights_sha256"] == file_sha256(DEFAULT_WEIGHTS_PATH)


def test_manifest_config_is_the_engine_default():
    assert trained_model_config() == ModelConfig()


def test_weights_load_strictly_into_default_transformer():
    state = load_trained_state_dict()
    result = Transformer(ModelConfig()).load_state_dict(state, strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    assert all(t.dtype == torch.float32 for t in state.values())


def test_manifest_validation_loss_meets_target():
    assert read_manifest()["final_val_loss"] <= 1.6


def test_fixed_prompt_greedy_continuation_is_stored_string(model):
    assert greedy(model, FIXED_PROMPT, 24) == EXPECTED_GREEDY


@pytest.mark.parametrize("prompt", LESSON_PROMPTS)
def test_lesson_prompt_continues_with_plain_text(model, prompt):
    out = greedy(model, prompt, 32).encode()
    assert sum(b in PLAIN_BYTES for b in out) / len(out) >= 0.9, out
    assert sum(chr(b).isalpha() for b in out) / len(out) >= 0.6, out


def test_load_refuses_weights_whose_hash_differs(tmp_path):
    weights = tmp_path / "model.pt"
    shutil.copy(DEFAULT_WEIGHTS_PATH, weights)
    shutil.copy(manifest_path(DEFAULT_WEIGHTS_PATH), manifest_path(weights))
    data = bytearray(weights.read_bytes())
    data[-100] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256"):
        load_trained_state_dict(weights)


def test_load_names_missing_weights_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="tools.train"):
        load_trained_state_dict(tmp_path / "model.pt")


def test_split_holds_out_whole_documents_about_five_percent_per_source():
    docs = load_documents()
    split = split_documents(docs, 0.05, seed=0)
    again = split_documents(docs, 0.05, seed=0)
    for source in ("pydoc", "notes"):
        share = len(split.val[source]) / (len(split.val[source]) + len(split.train[source]))
        assert 0.04 <= share <= 0.08, (source, share)
        assert torch.equal(split.val[source], again.val[source])
    held = next(d for d in docs if d.name == split.val_names["pydoc"][0])
    assert held.text.encode() in bytes(split.val["pydoc"])
    assert held.text.encode() not in bytes(split.train["pydoc"])


@pytest.mark.slow
def test_quick_training_writes_weights_that_its_manifest_vouches_for(tmp_path):
    out = tmp_path / "model.pt"
    # (one thread: the other test worker has the other core; train() puts torch's threads back)
    manifest = train(TrainConfig(**QUICK), out, command="python -m tools.train --quick", threads=1)
    assert manifest["trained_with"]["threads"] == 1 == torch.get_num_threads()
    assert manifest["weights_sha256"] == file_sha256(out)
    assert read_manifest(out)["final_val_loss"] == manifest["final_val_loss"] < 5.6  # below uniform, ln 256
    Transformer(trained_model_config(out)).load_state_dict(load_trained_state_dict(out))
