"""tools.hf_export: our trained weights as a Hugging Face Llama checkpoint, tensor for tensor,
and (in the vLLM environment, which has transformers) HF's LlamaForCausalLM gives our logits."""

from __future__ import annotations

import json
import subprocess

import pytest
import torch
from safetensors.torch import load_file
from vllm_support import require_vllm

from engine.model import Transformer
from engine.weights import load_trained_state_dict, trained_model_config
from tools import vllm_server as server
from tools.hf_export import byte_symbols, export, hf_name

PROMPT = "You are a patient teacher. Q: What is a KV cache?\nA: It is the memory"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return export(tmp_path_factory.mktemp("hf"))


def test_every_tensor_is_ours_under_its_llama_name(exported):
    ours = load_trained_state_dict()
    theirs = load_file(str(exported / "model.safetensors"))
    assert set(theirs) == {hf_name(k) for k in ours}
    assert len(theirs) == len(ours) == 1 + 4 * 9 + 2  # embed, 4 × (2 norms, 4 attn, 3 mlp), norm, lm_head
    for name, tensor in ours.items():
        assert torch.equal(theirs[hf_name(name)], tensor), name
    assert hf_name("blocks.3.attn.k_proj.weight") == "model.layers.3.self_attn.k_proj.weight"
    assert hf_name("blocks.0.mlp_norm.weight") == "model.layers.0.post_attention_layernorm.weight"


def test_config_and_tokenizer_describe_our_model(exported):
    cfg, model = json.loads((exported / "config.json").read_text()), trained_model_config()
    assert cfg["architectures"] == ["LlamaForCausalLM"] and not cfg["tie_word_embeddings"]
    assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_key_value_heads"], cfg["vocab_size"]) == (
        model.d_model, model.num_layers, model.num_kv_heads, model.vocab_size)
    vocab = json.loads((exported / "tokenizer.json").read_text())["model"]["vocab"]
    assert sorted(vocab.values()) == list(range(256)) and len(set(byte_symbols())) == 256
    assert vocab["A"] == ord("A") and vocab["Ġ"] == ord(" ")  # GPT-2's byte symbols: id = byte value


def test_hf_llama_gives_our_logits_and_our_token_ids(exported, tmp_path):
    """transformers (from the vLLM environment) loads the checkpoint; its logits for every
    position equal forward_full's within float32 rounding, and its tokenizer gives our bytes."""
    require_vllm()
    out = tmp_path / "hf.pt"
    script = (
        "import sys, torch\n"
        "from transformers import AutoTokenizer, LlamaForCausalLM\n"
        "d, prompt, out = sys.argv[1:]\n"
        "tok = AutoTokenizer.from_pretrained(d)\n"
        "model = LlamaForCausalLM.from_pretrained(d, dtype=torch.float32).eval()\n"
        "ids = tok(prompt, add_special_tokens=False)['input_ids']\n"
        "with torch.no_grad():\n"
        "    logits = model(torch.tensor([ids])).logits[0]\n"
        "torch.save({'ids': ids, 'logits': logits, 'text': tok.decode(ids)}, out)\n"
    )
    subprocess.run([str(server.PYTHON), "-c", script, str(exported), PROMPT, str(out)], check=True,
                   env=server.environment(), timeout=300)
    hf = torch.load(out)
    assert hf["ids"] == list(PROMPT.encode()) and hf["text"] == PROMPT
    model = Transformer(trained_model_config())
    model.load_state_dict(load_trained_state_dict())
    ours = model.eval().forward_full(hf["ids"])
    assert (hf["logits"] - ours).abs().max().item() < 1e-4
    assert torch.equal(hf["logits"].argmax(-1), ours.argmax(-1))
