"""The two frozen configs: the model's architecture and the engine's cache and scheduling."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

POLICIES = ("contiguous", "paged")
BACKENDS = ("auto", "torch", "native", "triton")
ADMISSIONS = ("wait", "refuse")
WEIGHTS = ("random", "trained")


_KINDS: dict[str, type | tuple[type, ...]] = {"int": int, "float": (int, float), "bool": bool, "str": str}


def _check_types(obj: DataclassInstance) -> None:
    """Fields must have their declared type (bool is not accepted as an int, nor an int as a bool)."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        kind = _KINDS.get(f.type) if isinstance(f.type, str) else None  # annotations are strings here
        if kind is None:
            continue
        if (kind is not bool and isinstance(value, bool)) or not isinstance(value, kind):
            raise TypeError(f"{type(obj).__name__}.{f.name} must be {f.type}, got {value!r}")


def _reject_unknown(cls: type[DataclassInstance], kwargs: dict[str, Any]) -> None:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {unknown}; known fields: {sorted(known)}")


@dataclass(frozen=True)
class ModelConfig:
    """A small decoder-only transformer over bytes: RoPE, RMSNorm, grouped KV heads, SwiGLU."""

    vocab_size: int = 256
    num_layers: int = 4
    d_model: int = 128
    num_heads: int = 4
    num_kv_heads: int = 2
    d_ff: int = 512
    max_seq_len: int = 1024
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        _check_types(self)
        for name in ("vocab_size", "num_layers", "d_model", "num_heads", "num_kv_heads", "d_ff",
                     "max_seq_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"ModelConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads "
                             f"({self.num_kv_heads})")
        if self.head_dim % 2:
            raise ValueError(f"head_dim ({self.head_dim}) must be even for RoPE")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        _reject_unknown(cls, d)
        return cls(**d)


@dataclass(frozen=True)
class EngineConfig:
    """Everything that decides how an engine stores KV and schedules requests.

    policy       'contiguous': each request reserves `reserve_blocks` consecutive blocks at
                 admission (first fit). 'paged': a request takes one block per `block_size` tokens.
    admission    'wait': a request that does not fit waits in the queue. 'refuse': it is refused
                 at once, with a reason (the lesson shows refusals as they happen).
    weights      'trained' (default): the weights in assets/, made by `python -m tools.train` for
                 the default ModelConfig. 'random': seeded deterministic initialisation, for any
                 architecture (tests use it with small models, for speed).
    """

    num_blocks: int = 64
    block_size: int = 16
    policy: str = "paged"
    reserve_blocks: int = 8
    prefix_sharing: bool = False
    admission: str = "wait"
    max_running: int = 256
    backend: str = "auto"
    device: str = "auto"
    seed: int = 0
    weights: str = "trained"
    model: ModelConfig = field(default_factory=ModelConfig)

    def __post_init__(self) -> None:
        _check_types(self)
        if not isinstance(self.model, ModelConfig):
            raise TypeError(f"EngineConfig.model must be a ModelConfig, got {self.model!r}")
        if self.num_blocks < 1:
            raise ValueError(f"num_blocks must be >= 1, got {self.num_blocks}")
        if self.block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {self.block_size}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.admission not in ADMISSIONS:
            raise ValueError(f"admission must be one of {ADMISSIONS}, got {self.admission!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {self.weights!r}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        if self.reserve_blocks < 1:
            raise ValueError(f"reserve_blocks must be >= 1, got {self.reserve_blocks}")
        if self.policy == "contiguous" and self.reserve_blocks > self.num_blocks:
            raise ValueError(f"reserve_blocks ({self.reserve_blocks}) cannot exceed num_blocks "
                             f"({self.num_blocks})")
        if self.max_running < 1:
            raise ValueError(f"max_running must be >= 1, got {self.max_running}")
        if self.weights == "trained" and self.model != ModelConfig():
            raise ValueError(
                "weights='trained' exist only for the default ModelConfig; use weights='random' "
                "for another architecture"
            )
        if self.prefix_sharing and self.policy != "paged":
            raise ValueError("prefix_sharing needs policy='paged' (only whole pages can be shared)")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EngineConfig:
        _reject_unknown(cls, d)
        d = dict(d)
        if isinstance(d.get("model"), dict):
            d["model"] = ModelConfig.from_dict(d["model"])
        return cls(**d)
