"""The native backend's forward: Transformer.forward's floats with a layer's small operations in C.

A decode step of the lesson's model is mostly per-operation cost, not arithmetic: a batch of 16's
four layers ran ~20 torch operations each (RMSNorm alone ~10 µs of torch's composite operations),
each a few µs of Python, module calls and dispatch around tiny tensors. Here a layer is

    x = add_rms_norm(h, a)          h += a (the previous MLP's output), then the attention's RMSNorm (C)
    qkv = x @ W_qkv                 (torch: MKL)
    o = decode_layer(qkv)           RoPE, K and V stored in their slots, paged decode attention (C)
    a = o @ W_o                     (torch)
    x = add_rms_norm(h, a)          the residual add and the MLP's RMSNorm (C)
    a = (silu(x @ W_gate) * (x @ W_up)) @ W_down    (torch: two matmuls, silu and mul in place)

with the checks of every index once per forward (kernels/cpu_layer.plan_layers), the weights read once
per forward and the scratch reused by every layer. A prefill's layer is the same but for its
attention: RoPE and the stores in C (rope_store), then the backend's extend attention (the last
layer's: a decode's, for each sequence's last row, as Transformer.forward does).

The same floats as Transformer.forward on the native backend for the matmuls, RoPE, the stores, the
attention and the residual adds; RMSNorm's sum of squares runs in another order than torch's, so its
last bit may differ (the tokens are the same: tests/kernels/test_cpu_layer.py). `forward` returns
None where the C does not take the tensors (Transformer.forward then runs its own path).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, cast

import torch
import torch.nn.functional as F

from engine.backend import AttentionBackend
from engine.config import ModelConfig
from kernels import cpu_layer, cpu_native


# What this reads of engine/model.py's classes (which import this module: named here by their parts)
class ForwardBatch(Protocol):
    is_decode: bool
    token_ids: torch.Tensor
    positions: torch.Tensor
    slot_mapping: torch.Tensor
    block_tables: torch.Tensor
    seq_lens: torch.Tensor
    query_start: torch.Tensor
    block_reads: torch.Tensor | None


class KVPool(Protocol):
    k: list[torch.Tensor]
    v: list[torch.Tensor]


class Transformer(Protocol):
    cfg: ModelConfig
    rope_cos: torch.Tensor
    rope_sin: torch.Tensor

    def __getattr__(self, name: str) -> Any: ...  # (its modules and parameters(): an nn.Module's)


# per layer: attn_norm's weight, W_qkv.t(), W_o.t(), mlp_norm's weight, W_gate_up.t(), W_down.t()
LayerWeights = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def layer_weights(model: Transformer) -> list[LayerWeights]:
    """Each layer's weights, transposed (views), q/k/v and gate/up stacked (engine/model.py's
    fused_weight: the same sums bit for bit). Built once and kept on the model while each of its
    parameters holds the same memory at the same version (an in-place change, as load_state_dict or
    init_weights makes, bumps it). (The parameters are listed once: walking the modules for them
    would cost ~50 µs a forward.)"""
    params = model.__dict__.get("_fused_params")
    if params is None:
        params = model.__dict__["_fused_params"] = tuple(model.parameters())
    key = tuple((p.data_ptr(), p._version) for p in params)
    cached = model.__dict__.get("_fused_layers")
    if cached is None or cached[0] != key:
        layers = []
        for blk in model.blocks:
            att, mlp = blk.attn, blk.mlp
            layers.append((blk.attn_norm.weight,
                           torch.cat([att.q_proj.weight, att.k_proj.weight, att.v_proj.weight]).t(),
                           att.o_proj.weight.t(), blk.mlp_norm.weight,
                           torch.cat([mlp.gate.weight, mlp.up.weight]).t(), mlp.down.weight.t()))
        cached = model.__dict__["_fused_layers"] = (key, layers)
    return cast(list[LayerWeights], cached[1])


def _scratch(name: str, rows: int, cols: int) -> torch.Tensor:
    """A (rows, cols) float32 buffer this thread keeps from one forward to the next, grown as needed
    (at most ~6 MB in all: a prefill group's 1,024 rows). A prefill's gate/up output is 4 MB: made
    afresh in every layer, glibc took it from the OS each time and its pages were faulted in again
    (a batch of 16 prompts' prefill was 15% slower for it). Per thread: forwards run on several."""
    bufs: dict[str, torch.Tensor] = _SCRATCH.__dict__.setdefault("bufs", {})
    buf = bufs.get(name)
    if buf is None or buf.numel() < rows * cols:
        buf = bufs[name] = torch.empty(rows * cols, dtype=torch.float32)
    return buf[: rows * cols].view(rows, cols)


_SCRATCH = threading.local()


def forward(model: Transformer, batch: ForwardBatch, kv: KVPool,
            backend: AttentionBackend) -> torch.Tensor | None:
    """Transformer.forward's logits, (S, vocab), and its KV writes; None where the C does not take
    these tensors (nothing is written then)."""
    cfg = model.cfg
    decode = (cpu_native.plan_decode(batch.block_tables, batch.seq_lens, kv.k[0].shape[1])
              if batch.is_decode else None)
    plan = cpu_layer.plan_layers(batch.positions, batch.slot_mapping, model.rope_cos, model.rope_sin, kv.k,
                                 kv.v, cfg.num_heads, decode)
    if plan is None:
        return None
    weights = layer_weights(model)
    scale, eps, d_ff = cfg.head_dim**-0.5, cfg.norm_eps, cfg.d_ff
    h = F.embedding(batch.token_ids, model.embed.weight)  # (T, d_model), the residual stream
    rows, width = h.shape
    # this thread's scratch: x (each RMSNorm's output), qkv, a (o_proj's and down's outputs), gate/up
    x, qkv, a, gate_up = (_scratch(name, rows, cols) for name, cols in
                          (("x", width), ("qkv", weights[0][1].shape[1]), ("a", width),
                           ("gate_up", 2 * d_ff)))
    add: torch.Tensor | None = None  # what the next add_rms_norm adds to h first: the last MLP's output
    # (torch.mm(x, W.t(), out=...): F.linear(x, W)'s floats, bit for bit, into the scratch)
    for layer, (w_attn_norm, w_qkv_t, w_o_t, w_mlp_norm, w_gate_up_t, w_down_t) in enumerate(weights):
        cpu_layer.add_rms_norm(h, add, w_attn_norm, eps, x)
        torch.mm(x, w_qkv_t, out=qkv)
        if decode is not None:
            o = cpu_layer.decode_layer(plan, layer, qkv, scale)
            if layer == 0 and batch.block_reads is not None:
                cpu_layer.count_reads(plan, batch.block_reads)
        else:
            q = cpu_layer.rope_store(plan, layer, qkv)
            if layer < len(weights) - 1:
                o = backend.extend_attention(q, kv.k[layer], kv.v[layer], batch.block_tables,
                                             batch.query_start, batch.seq_lens, scale)
            else:  # every row's KV is stored; only each sequence's last row goes on to the logits
                last = batch.query_start[1:].long() - 1
                o = backend.decode_attention(q[last], kv.k[layer], kv.v[layer], batch.block_tables,
                                             batch.seq_lens, scale)
                h = h[last]
                x, a, gate_up = x[: h.shape[0]], a[: h.shape[0]], gate_up[: h.shape[0]]
        torch.mm(o.view(o.shape[0], -1), w_o_t, out=a)  # o_proj(o)
        cpu_layer.add_rms_norm(h, a, w_mlp_norm, eps, x)
        torch.mm(x, w_gate_up_t, out=gate_up)
        torch.mm(F.silu(gate_up[:, :d_ff], inplace=True).mul_(gate_up[:, d_ff:]), w_down_t, out=a)
        add = a
    cpu_layer.add_rms_norm(h, add, model.final_norm.weight, eps, x)
    return F.linear(x, model.lm_head.weight)
