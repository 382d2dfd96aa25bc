"""The model: a small decoder-only transformer that reads and writes KV only through the pool.

`forward` runs one batch (a packed prefill-on-prefix or a one-token decode) against the paged KV
pool through an attention backend. `forward_full` runs a whole sequence with no cache at all; it
exists to verify the cached path gives the same tokens. `load_model` keeps one model per
architecture, weights, seed and device per process, shared read-only by every engine.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from engine import fused
from engine.backend import AttentionBackend
from engine.config import ModelConfig


@dataclass
class ForwardBatch:
    """One model call over the KV pool.

    Sequence s contributes query rows [query_start[s], query_start[s+1]) of the packed tokens:
    its newest tokens, ending at position seq_lens[s] - 1. Decode is the case of one row each.
    """

    is_decode: bool
    token_ids: torch.Tensor  # (T,) int64
    positions: torch.Tensor  # (T,) int64
    slot_mapping: torch.Tensor  # (T,) int64, where each token's K and V are written
    block_tables: torch.Tensor  # (S, max_pages) int32
    seq_lens: torch.Tensor  # (S,) int32, tokens in the cache after this call
    query_start: torch.Tensor  # (S + 1,) int32
    block_reads: torch.Tensor | None = None  # (num_blocks,) int32, decode reads of layer 0

    def split(self, max_tokens: int) -> list[ForwardBatch]:
        """The batch as consecutive groups of whole sequences, each of at most `max_tokens` rows
        (a longer sequence is a group of its own): the same rows, so the same KV writes and logits.
        One forward per group keeps a group's activations in the CPU's cache between the layer's
        operations, where a prefill of a whole batch at once streams them through memory."""
        starts = self.query_start.tolist()
        if starts[-1] <= max_tokens:
            return [self]
        parts, first = [], 0
        for s in range(1, len(starts)):
            if s == len(starts) - 1 or starts[s + 1] - starts[first] > max_tokens:
                a, b = starts[first], starts[s]
                parts.append(ForwardBatch(
                    self.is_decode, self.token_ids[a:b], self.positions[a:b], self.slot_mapping[a:b],
                    self.block_tables[first:s], self.seq_lens[first:s], self.query_start[first : s + 1] - a,
                    self.block_reads,
                ))
                first = s
        return parts


class KVPool:
    """Per layer, K and V shaped (num_blocks, block_size, num_kv_heads, head_dim): vLLM's layout."""

    def __init__(self, cfg: ModelConfig, num_blocks: int, block_size: int, device: torch.device,
                 dtype: torch.dtype = torch.float32) -> None:
        shape = (num_blocks, block_size, cfg.num_kv_heads, cfg.head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.num_layers)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.num_layers)]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x * rsqrt(mean(x^2) + eps) * weight, in one fused op (the same floats as the three-op form)
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)


def fused_weight(owner: nn.Module, *linears: nn.Linear) -> torch.Tensor:
    """The weights of `linears` stacked, so that one matmul computes all their outputs (the same
    sums, bit for bit, as one matmul each; fewer calls is what counts for a small model). Built
    once and kept on `owner` while the weights are unchanged; rebuilt each call when gradients are
    on (training), so that it stays differentiable."""
    weights = [lin.weight for lin in linears]
    if torch.is_grad_enabled():
        return torch.cat(weights)
    key = tuple((w.data_ptr(), w._version) for w in weights)
    cached = owner.__dict__.get("_fused")
    if cached is None or cached[0] != key:
        with torch.inference_mode():
            cached = owner.__dict__["_fused"] = (key, torch.cat(weights))
    return cached[1]


def rope_tables(cfg: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of each position's angles, (max_seq_len, head_dim) each, laid out for apply_rope:
    cos twice, and sin negated then as is."""
    half = cfg.head_dim // 2
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(half, dtype=torch.float64) / half))
    angles = torch.outer(torch.arange(cfg.max_seq_len, dtype=torch.float64), inv_freq)  # (max_seq_len, half)
    cos, sin = angles.cos().float(), angles.sin().float()
    return torch.cat([cos, cos], dim=-1), torch.cat([-sin, sin], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: (T, heads, head_dim); cos, sin: (T, 1, head_dim) from rope_tables. Rotates pairs (i, i + half):
    [x1 * cos - x2 * sin, x2 * cos + x1 * sin], as x * [cos, cos] + [x2, x1] * [-sin, sin] (the same
    floats: negating is exact, and the sums are the same two products), in four operations."""
    return (x * cos).add_(x.roll(x.shape[-1] // 2, dims=-1).mul_(sin))


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.q_proj = nn.Linear(cfg.d_model, cfg.num_heads * cfg.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.d_model, cfg.num_kv_heads * cfg.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.d_model, cfg.num_kv_heads * cfg.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * cfg.head_dim, cfg.d_model, bias=False)
        self.scale = 1.0 / math.sqrt(cfg.head_dim)

    def _qkv(self, x: torch.Tensor, cos: torch.Tensor,
             sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        c = self.cfg
        # q_proj(x), k_proj(x), v_proj(x)
        qkv = F.linear(x, fused_weight(self, self.q_proj, self.k_proj, self.v_proj))
        qkv = qkv.view(-1, c.num_heads + 2 * c.num_kv_heads, c.head_dim)
        qk = apply_rope(qkv[:, : c.num_heads + c.num_kv_heads], cos, sin)  # q and k's heads rotated at once
        q, k = qk[:, : c.num_heads], qk[:, c.num_heads :]  # (T, H, D), (T, KVH, D)
        v = qkv[:, c.num_heads + c.num_kv_heads :]  # (T, KVH, D)
        return q, k, v

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, batch: ForwardBatch,
                k_cache: torch.Tensor, v_cache: torch.Tensor, backend: AttentionBackend,
                block_reads: torch.Tensor | None, plan: object,
                last_rows: torch.Tensor | None = None) -> torch.Tensor:
        """Stores every row's K and V, and returns the attention output of every row, or of only
        `last_rows` (each sequence's last row) when given: one query per sequence, at its end,
        which is what a decode computes."""
        q, k, v = self._qkv(x, cos, sin)
        backend.store_kv(k_cache, v_cache, k, v, batch.slot_mapping)
        if last_rows is not None:
            q = q[last_rows]
        if batch.is_decode or last_rows is not None:
            extra = {"plan": plan} if plan is not None else {}
            o = backend.decode_attention(
                q, k_cache, v_cache, batch.block_tables, batch.seq_lens, self.scale, block_reads=block_reads,
                **extra
            )
        else:
            o = backend.extend_attention(
                q, k_cache, v_cache, batch.block_tables, batch.query_start, batch.seq_lens, self.scale
            )
        return F.linear(o.reshape(q.shape[0], -1), self.o_proj.weight)  # o_proj(o)

    def forward_full(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Causal self-attention over whole sequences, no cache. x: (B, T, d_model)."""
        c = self.cfg
        b, t, _ = x.shape
        q, k, v = (z.view(b, t, -1, c.head_dim) for z in self._qkv(x.reshape(b * t, -1), cos, sin))
        group = c.num_heads // c.num_kv_heads
        k = k.repeat_interleave(group, dim=2)  # (B, T, H, D)
        v = v.repeat_interleave(group, dim=2)
        o = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, scale=self.scale
        )  # (B, H, T, D)
        return F.linear(o.transpose(1, 2).reshape(b, t, -1), self.o_proj.weight)  # o_proj(o)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.up = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.down = nn.Linear(cfg.d_ff, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, fused_weight(self, self.gate, self.up)).chunk(2, dim=-1)  # gate(x), up(x)
        if torch.is_grad_enabled():
            return F.linear(F.silu(gate) * up, self.down.weight)  # down(silu(gate) * up)
        # the same floats, without two temporaries
        return F.linear(F.silu(gate, inplace=True).mul_(up), self.down.weight)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = MLP(cfg)


class Transformer(nn.Module):
    rope_cos: torch.Tensor  # buffers (register_buffer), (max_seq_len, head_dim): rope_tables
    rope_sin: torch.Tensor

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.num_layers))
        self.final_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def init_weights(self, seed: int) -> None:
        """Seeded, deterministic initialisation.

        Unit-variance embeddings and 1/sqrt(fan_in) projections keep every layer's output on the
        scale of its input, so an untrained model's next token depends on its whole context
        (not just on the last byte): that is what makes cache-versus-no-cache tests sensitive.
        """
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name == "embed.weight":
                    p.copy_(torch.randn(p.shape, generator=gen))
                else:
                    p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def _logits(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(self.final_norm(h), self.lm_head.weight)  # lm_head(final_norm(h)): (rows, vocab)

    @torch.inference_mode()
    def forward(self, batch: ForwardBatch, kv: KVPool, backend: AttentionBackend) -> torch.Tensor:
        """Logits of each sequence's last new token: (S, vocab). Writes the new tokens' KV. The
        native backend's forward is engine/fused.py's (a layer's small operations in C), where the C
        takes the tensors; this one is every other backend's."""
        if backend.fused and (logits := fused.forward(self, batch, kv, backend)) is not None:
            return logits
        # (T, 1, head_dim): the same for every head
        cos = self.rope_cos.index_select(0, batch.positions)[:, None]
        sin = self.rope_sin.index_select(0, batch.positions)[:, None]
        h = self.embed(batch.token_ids)  # (T, d_model)
        plan = None  # what every layer's decode attention reads the same way, when the backend plans it
        if batch.is_decode and backend.plan_decode is not None:
            plan = backend.plan_decode(batch.block_tables, batch.seq_lens, kv.k[0].shape[1])
        # (S,): each sequence's last new row (a decode's rows are all last rows: None)
        last = None if batch.is_decode else batch.query_start[1:].long() - 1
        blocks = cast(Sequence[Block], self.blocks)  # nn.ModuleList types its items as Modules
        for layer, blk in enumerate(blocks):
            reads = batch.block_reads if layer == 0 else None
            if layer < len(blocks) - 1:
                h += blk.attn(blk.attn_norm(h), cos, sin, batch, kv.k[layer], kv.v[layer], backend, reads,
                              plan)
            else:  # all rows' KV is stored, but only each sequence's last row goes on to the logits
                a = blk.attn(blk.attn_norm(h), cos, sin, batch, kv.k[layer], kv.v[layer], backend, reads,
                             plan, last)
                h = a.add_(h if last is None else h[last])  # h + a, the same floats (addition commutes)
            h += blk.mlp(blk.mlp_norm(h))
        return self._logits(h)

    def forward_sequences(self, ids: torch.Tensor) -> torch.Tensor:
        """Logits for every position of a batch of equal-length sequences, no cache.

        ids: (B, T) int64 -> (B, T, vocab). Differentiable: training uses it.
        """
        t = ids.shape[1]
        cos, sin = (table[:t].repeat(ids.shape[0], 1)[:, None] for table in (self.rope_cos, self.rope_sin))
        h = self.embed(ids)  # (B, T, d_model)
        for blk in cast(Sequence[Block], self.blocks):
            h = h + blk.attn.forward_full(blk.attn_norm(h), cos, sin)
            h = h + blk.mlp(blk.mlp_norm(h))
        return self._logits(h)

    def forward_full(self, token_ids: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Logits for every position of one sequence, computed with no KV cache: (T, vocab)."""
        ids = torch.as_tensor(token_ids, dtype=torch.long, device=self.embed.weight.device)
        if ids.ndim != 1 or not 0 < ids.numel() <= self.cfg.max_seq_len:
            raise ValueError(f"forward_full takes 1..{self.cfg.max_seq_len} token ids, got shape "
                             f"{tuple(ids.shape)}")
        with torch.inference_mode():
            return self.forward_sequences(ids[None])[0]


_MODELS: dict[tuple[ModelConfig, str, int, str], Transformer] = {}
_MODELS_LOCK = threading.Lock()


def load_model(model_cfg: ModelConfig, weights: str, seed: int, device: torch.device) -> Transformer:
    """One model per (architecture, weights, seed, device) per process, shared read-only."""
    key = (model_cfg, weights, seed, str(device))
    with _MODELS_LOCK:
        if key not in _MODELS:
            model = Transformer(model_cfg)
            if weights == "trained":
                from engine.weights import load_trained_state_dict

                model.load_state_dict(load_trained_state_dict())
            else:
                model.init_weights(seed)
            model.to(device).eval().requires_grad_(False)
            _MODELS[key] = model
        return _MODELS[key]
