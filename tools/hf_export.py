"""Our trained model as a Hugging Face Llama checkpoint, so a real serving engine (vLLM) can run
the very weights the lesson's engine runs.

    python -m tools.hf_export OUT_DIR       # config.json, model.safetensors, tokenizer files

The architecture is Llama's, name for name: RMSNorm before attention and before the MLP, grouped
KV heads, RoPE rotating the pairs (i, i + head_dim/2) exactly as HF's `rotate_half` does (so the
q and k projections need no permutation), SwiGLU, an untied `lm_head`. The tokenizer is ours too:
one token per byte, id = byte value, written as a byte-level BPE with no merges (the 256 byte
symbols GPT-2 uses) and no special tokens. Only `safetensors` is needed, not `transformers`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch

from engine.config import ModelConfig
from engine.weights import DEFAULT_WEIGHTS_PATH, load_trained_state_dict, read_manifest

MODEL_NAME = "kvviz"  # what vLLM serves it as (`--served-model-name`)
WEIGHTS_FILE = "model.safetensors"


def hf_name(ours: str) -> str:
    """The HF Llama parameter name of one of our state_dict's names."""
    if ours == "embed.weight":
        return "model.embed_tokens.weight"
    if ours == "final_norm.weight":
        return "model.norm.weight"
    if ours == "lm_head.weight":
        return ours
    _, layer, rest = ours.split(".", 2)  # blocks.<i>.<rest>
    rest = {
        "attn_norm.weight": "input_layernorm.weight",
        "mlp_norm.weight": "post_attention_layernorm.weight",
        "mlp.gate.weight": "mlp.gate_proj.weight",
        "mlp.up.weight": "mlp.up_proj.weight",
        "mlp.down.weight": "mlp.down_proj.weight",
    }.get(rest, rest.replace("attn.", "self_attn."))  # attn.{q,k,v,o}_proj.weight
    return f"model.layers.{layer}.{rest}"


def hf_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Our state_dict renamed to Llama's names (the same tensors, contiguous, float32)."""
    return {hf_name(k): v.detach().float().contiguous() for k, v in state.items()}


def llama_config(cfg: ModelConfig) -> dict[str, Any]:
    """config.json for transformers' LlamaForCausalLM (and vLLM's Llama)."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.d_model,
        "intermediate_size": cfg.d_ff,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim,
        "max_position_embeddings": cfg.max_seq_len,
        "rms_norm_eps": cfg.norm_eps,
        "rope_theta": cfg.rope_theta,
        "rope_parameters": {"rope_type": "default", "rope_theta": cfg.rope_theta},
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "bos_token_id": None,
        "eos_token_id": None,
        "pad_token_id": None,
        "torch_dtype": "float32",
        "dtype": "float32",
    }


def byte_symbols() -> list[str]:
    """The printable character GPT-2's byte-level BPE uses for each byte 0..255 (its
    `bytes_to_unicode`): printable Latin-1 bytes stand for themselves, the rest map to 256+."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return [chr(b) if b in keep else chr(next(extra)) for b in range(256)]


def tokenizer_json() -> dict[str, Any]:
    """tokenizer.json (HF `tokenizers`): bytes in, one token per byte, id = byte value."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": None,
        "decoder": byte_level,
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": {s: i for i, s in enumerate(byte_symbols())}, "merges": [],
        },
    }


TOKENIZER_CONFIG = {
    "tokenizer_class": "PreTrainedTokenizerFast",
    "model_max_length": ModelConfig().max_seq_len,
    "add_bos_token": False,
    "add_eos_token": False,
    "clean_up_tokenization_spaces": False,
}


def export(out_dir: str | Path, weights: str | Path | None = None) -> Path:
    """Write the trained weights at `weights` (default assets/model.pt, hash-checked) to
    `out_dir` as a HF Llama checkpoint; returns the directory."""
    from safetensors.torch import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wpath = DEFAULT_WEIGHTS_PATH if weights is None else Path(weights)
    manifest = read_manifest(wpath)
    cfg = ModelConfig.from_dict(manifest["model_config"])
    save_file(hf_state_dict(load_trained_state_dict(wpath)), str(out / WEIGHTS_FILE),
              metadata={"format": "pt", "source": f"kvviz {wpath.name} sha256 {manifest['weights_sha256']}"})
    (out / "config.json").write_text(json.dumps(llama_config(cfg), indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps({"do_sample": False}, indent=2) + "\n")
    (out / "tokenizer.json").write_text(json.dumps(tokenizer_json(), ensure_ascii=False) + "\n")
    (out / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG, indent=2) + "\n")
    (out / "special_tokens_map.json").write_text("{}\n")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="directory to write the checkpoint to (created if missing)")
    parser.add_argument("--weights", default=None, help="our weights file (default: assets/model.pt)")
    args = parser.parse_args(argv)
    out = export(args.out_dir, args.weights)
    print(f"wrote a Llama checkpoint of {args.weights or DEFAULT_WEIGHTS_PATH} to {out}")


if __name__ == "__main__":
    main()
