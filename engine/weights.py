"""The trained weights in assets/: a torch state_dict and the manifest that vouches for it.

`python -m tools.train` writes both. The manifest (model.json next to model.pt) records the
architecture, the corpus, the losses, and the sha256 of the weights file; loading refuses a file
whose hash does not match, so a stale or half-copied file can never pass for the trained model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch

from engine.config import ModelConfig

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"
DEFAULT_WEIGHTS_PATH = ASSETS_DIR / "model.pt"


def manifest_path(weights_path: str | Path) -> Path:
    """The manifest belongs to the weights file it sits beside: model.pt -> model.json."""
    return Path(weights_path).with_suffix(".json")


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(path: str | Path | None = None) -> dict[str, Any]:
    """The manifest of the weights at `path` (default assets/model.pt), as a dict."""
    mpath = manifest_path(DEFAULT_WEIGHTS_PATH if path is None else path)
    if not mpath.is_file():
        raise FileNotFoundError(f"no weights manifest at {mpath}; run `python -m tools.train` to make one")
    manifest: dict[str, Any] = json.loads(mpath.read_text())
    return manifest


def trained_model_config(path: str | Path | None = None) -> ModelConfig:
    """The architecture the trained weights were made for, from the manifest."""
    return ModelConfig.from_dict(read_manifest(path)["model_config"])


def load_trained_state_dict(path: str | Path | None = None) -> dict[str, torch.Tensor]:
    """The trained state_dict (float32, on CPU), after checking its sha256 against the manifest.

    Raises FileNotFoundError if the weights or the manifest are missing, and ValueError if the
    file's hash is not the one the manifest records.
    """
    wpath = Path(DEFAULT_WEIGHTS_PATH if path is None else path)
    if not wpath.is_file():
        raise FileNotFoundError(f"no trained weights at {wpath}; run `python -m tools.train` to make them")
    expected = read_manifest(wpath)["weights_sha256"]
    actual = file_sha256(wpath)
    if actual != expected:
        raise ValueError(
            f"{wpath} has sha256 {actual}, but {manifest_path(wpath).name} records {expected}: "
            "the weights file is not the one the manifest describes (retrain, or restore both files together)"
        )
    state = torch.load(wpath, map_location="cpu", weights_only=True)
    return {name: t.float() for name, t in state.items()}
