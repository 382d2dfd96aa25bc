"""kvviz's inference engine: a small real model over a paged (or contiguous) KV cache.

No UI imports here: the engine is usable from a script or a notebook.
"""

from engine.config import EngineConfig, ModelConfig
from engine.engine import Engine, GenerationResult
from engine.snapshot import Metrics, Snapshot
from engine.util import ceil_div

__all__ = ["Engine", "EngineConfig", "GenerationResult", "Metrics", "ModelConfig", "Snapshot", "ceil_div"]
