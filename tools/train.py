"""Train the engine's own byte-level model, on CPU, in a few minutes.

    python -m tools.train                  # the recipe behind assets/model.pt and model.json
    python -m tools.train --quick          # a tiny run that checks the pipeline end to end

The corpus is one every machine has, CPython's `pydoc_data.topics` (the Python documentation
topics, PSF licence), plus the notes in tools/corpus/*.txt about caches, memory, paging,
operating systems and LLM serving, which make the lesson's continuations fit its story.
Losses are in nats per byte (the model's tokens are bytes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import shlex
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from engine.config import ModelConfig
from engine.model import Transformer
from engine.weights import DEFAULT_WEIGHTS_PATH, file_sha256, manifest_path

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"

# The documentation's typographic punctuation, spelled in ASCII so the model writes plain text.
_ASCII_PUNCTUATION = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2026": "...",
        "\u2014": "--",
        "\u2013": "-",
    }
)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1100
    seed: int = 0
    batch_size: int = 32  # windows per step
    context: int = 256  # bytes per window
    notes_per_batch: int = 8  # of the batch_size windows, how many come from tools/corpus
    lr: float = 3e-3
    min_lr: float = 3e-4  # the cosine schedule ends here
    warmup_steps: int = 50
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    val_fraction: float = 0.05  # of each source's bytes, held out by whole document
    eval_every: int = 100
    eval_windows: int = 64  # train windows per source scored for the reported train loss

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.eval_every < 1:
            raise ValueError("steps, batch_size and eval_every must be >= 1")
        if not 0 <= self.notes_per_batch <= self.batch_size:
            raise ValueError(f"notes_per_batch must be in 0..batch_size, got {self.notes_per_batch}")
        if not 1 <= self.context < ModelConfig().max_seq_len:
            raise ValueError(f"context must be in 1..{ModelConfig().max_seq_len - 1}, got {self.context}")
        if not 0 < self.val_fraction < 0.5:
            raise ValueError(f"val_fraction must be in (0, 0.5), got {self.val_fraction}")


QUICK = dict(
    steps=30, batch_size=8, context=64, notes_per_batch=2, warmup_steps=5, eval_every=10, eval_windows=8
)


@dataclass(frozen=True)
class Document:
    source: str  # 'pydoc' or 'notes'
    name: str
    text: str


@dataclass(frozen=True)
class Split:
    """Each source's train and validation bytes, documents joined by blank lines."""

    train: dict[str, torch.Tensor]  # source -> (num_bytes,) uint8
    val: dict[str, torch.Tensor]
    val_names: dict[str, list[str]]


def load_documents() -> list[Document]:
    """pydoc topics (one document each) and the notes' paragraphs (one document each), in a fixed order."""
    from pydoc_data.topics import topics

    docs = [
        Document("pydoc", name, topics[name].translate(_ASCII_PUNCTUATION).strip()) for name in sorted(topics)
    ]
    for path in sorted(CORPUS_DIR.glob("*.txt")):
        paragraphs = [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
        docs += [Document("notes", f"{path.stem}#{i}", p) for i, p in enumerate(paragraphs)]
    return docs


def split_documents(docs: list[Document], val_fraction: float, seed: int) -> Split:
    """Hold out whole documents, per source, in a seeded random order, until val_fraction of the bytes.

    A document that would push the held-out share past 1.5 * val_fraction is skipped, so one huge
    topic cannot become most of the validation set.
    """
    gen = torch.Generator().manual_seed(seed)
    train, val, val_names = {}, {}, {}
    for source in sorted({d.source for d in docs}):
        group = [d for d in docs if d.source == source]
        total = sum(len(d.text.encode()) for d in group)
        held, held_bytes = set(), 0
        for i in torch.randperm(len(group), generator=gen).tolist():
            size = len(group[i].text.encode())
            if held_bytes >= val_fraction * total:
                break
            if held_bytes + size <= 1.5 * val_fraction * total:
                held.add(i)
                held_bytes += size
        train[source] = _join([d for i, d in enumerate(group) if i not in held])
        val[source] = _join([group[i] for i in sorted(held)])
        val_names[source] = [group[i].name for i in sorted(held)]
    return Split(train, val, val_names)


def _join(docs: list[Document]) -> torch.Tensor:
    data = "\n\n".join(d.text for d in docs).encode("utf-8") + b"\n\n"
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def sample_windows(data: torch.Tensor, num: int, length: int, gen: torch.Generator) -> torch.Tensor:
    """`num` random windows of `length + 1` bytes: inputs and their next-byte targets. (num, length + 1)"""
    starts = torch.randint(0, len(data) - length - 1, (num,), generator=gen)
    return torch.stack([data[s : s + length + 1] for s in starts.tolist()]).long()


def init_for_training(model: Transformer, seed: int) -> None:
    """GPT-2's initialisation: N(0, 0.02), residual output projections scaled by 1/sqrt(2 * layers).

    (Transformer.init_weights suits the untrained engine's tests, not training: its unit-variance
    embeddings and full-scale projections make the first steps unstable.)
    """
    gen = torch.Generator().manual_seed(seed)
    residual_std = 0.02 / math.sqrt(2 * model.cfg.num_layers)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                std = residual_std if name.endswith(("o_proj.weight", "down.weight")) else 0.02
                p.copy_(torch.randn(p.shape, generator=gen) * std)


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up, then a cosine from lr down to min_lr at the last step."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))


def batch_loss(model: Transformer, windows: torch.Tensor) -> torch.Tensor:
    """Mean next-byte cross-entropy, in nats per byte, of (B, T + 1) windows."""
    logits = model.forward_sequences(windows[:, :-1])  # (B, T, vocab)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1))


def consecutive_windows(data: torch.Tensor, context: int) -> torch.Tensor:
    """All of `data` as consecutive windows of `context` bytes (plus each one's next byte).
    (N, context + 1)"""
    num = (len(data) - 1) // context
    return torch.stack([data[i * context : (i + 1) * context + 1] for i in range(num)]).long()


@torch.no_grad()
def evaluate(model: Transformer, windows: torch.Tensor) -> float:
    """Mean nats per byte over (N, T + 1) windows, scored in chunks."""
    total = sum(float(batch_loss(model, chunk)) * len(chunk) for chunk in torch.split(windows, 32))
    return total / len(windows)


def _optimizer(model: Transformer, cfg: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for n, p in model.named_parameters() if p.ndim == 2 and n != "embed.weight"]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim == 2 and n != "embed.weight")]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95))


@torch.no_grad()
def continue_text(
    model: Transformer, prompt: str, num_bytes: int, temperature: float = 0.0, seed: int = 0
) -> str:
    """The model's continuation of `prompt`: greedy at temperature 0, else sampled (seeded)."""
    ids = list(prompt.encode("utf-8"))
    gen = torch.Generator().manual_seed(seed)
    for _ in range(num_bytes):
        logits = model.forward_full(ids[-model.cfg.max_seq_len :])[-1]
        if temperature == 0:
            ids.append(int(logits.argmax()))
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
            ids.append(int(torch.multinomial(probs, 1, generator=gen)))
    return bytes(ids[len(prompt.encode("utf-8")) :]).decode("utf-8", errors="replace")


def train(cfg: TrainConfig, out: Path, command: str, threads: int = 2) -> dict[str, Any]:
    """Train, save the state_dict to `out` and its manifest beside it; return the manifest.
    `threads`: torch's intra-op threads while training (put back as they were after it); the
    recipe's are 2, a test that shares the machine with another test worker asks for 1 (two
    OpenMP threads on one busy core wait on each other: several times slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _train(cfg, out, command, threads)
    finally:
        torch.set_num_threads(before)


def _train(cfg: TrainConfig, out: Path, command: str, threads: int) -> dict[str, Any]:
    torch.manual_seed(cfg.seed)
    started = time.time()
    docs = load_documents()
    split = split_documents(docs, cfg.val_fraction, cfg.seed)
    for source in split.train:
        print(
            f"{source}: {len(split.train[source])} train bytes, {len(split.val[source])} val bytes "
            f"({len(split.val_names[source])} documents held out)"
        )

    model_cfg = ModelConfig()
    model = Transformer(model_cfg)
    init_for_training(model, cfg.seed)
    opt = _optimizer(model, cfg)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    num_pydoc = cfg.batch_size - cfg.notes_per_batch

    def val_losses() -> dict[str, float]:
        model.eval()
        losses = {s: evaluate(model, consecutive_windows(split.val[s], cfg.context)) for s in split.val}
        model.train()
        return losses

    for step in range(cfg.steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, cfg)
        windows = torch.cat(
            [
                sample_windows(split.train["pydoc"], num_pydoc, cfg.context, gen),
                sample_windows(split.train["notes"], cfg.notes_per_batch, cfg.context, gen),
            ]
        )
        loss = batch_loss(model, windows)
        opt.zero_grad(set_to_none=True)
        torch.autograd.backward(loss)  # loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if step % 10 == 0 or step == cfg.steps - 1:
            elapsed, done = time.time() - started, (step + 1) / cfg.steps
            print(
                f"step {step:5d} of {cfg.steps} ({100 * done:3.0f}%)  lr {learning_rate(step, cfg):.2e}  "
                f"train {loss.item():.3f}  {elapsed:6.0f}s, about {elapsed / done - elapsed:.0f}s left",
                flush=True,
            )
        if (step + 1) % cfg.eval_every == 0 and step + 1 < cfg.steps:
            losses = val_losses()
            print(
                f"step {step + 1:5d}  val " + "  ".join(f"{s} {v:.3f}" for s, v in losses.items()), flush=True
            )

    model.eval()
    val = val_losses()
    val_all = _weighted(val, {s: len(split.val[s]) for s in val})
    eval_gen = torch.Generator().manual_seed(cfg.seed + 2)
    train_losses = {
        s: evaluate(model, sample_windows(split.train[s], cfg.eval_windows, cfg.context, eval_gen))
        for s in split.train
    }
    train_all = _weighted(train_losses, {s: len(split.train[s]) for s in split.train})
    wall = time.time() - started
    print(
        f"final  train {train_all:.3f}  val {val_all:.3f}  "
        + "  ".join(f"val[{s}] {v:.3f}" for s, v in val.items())
        + f"  wall {wall:.0f}s"
    )

    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out)
    manifest = {
        "model_config": asdict(model_cfg),
        "weights_file": out.name,
        "weights_sha256": file_sha256(out),
        "weights_dtype": "float32",
        "num_parameters": model.num_parameters(),
        "train_config": asdict(cfg),
        "steps": cfg.steps,
        "seed": cfg.seed,
        "loss_unit": "nats per byte",
        "final_train_loss": round(train_all, 4),
        "final_val_loss": round(val_all, 4),
        "final_train_loss_by_source": {s: round(v, 4) for s, v in train_losses.items()},
        "final_val_loss_by_source": {s: round(v, 4) for s, v in val.items()},
        "corpus": _corpus_description(docs, split),
        "licence": {
            "weights": "Derived from the corpus below; distributed under the project's terms (see "
                       "assets/LICENSE-model.md).",
            "pydoc": "CPython's pydoc_data.topics, Copyright Python Software Foundation, PSF License "
                     "Agreement.",
            "notes": "tools/corpus/*.txt, written for this project, under the project's terms.",
        },
        "trained_with": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": threads,
            "wall_seconds": round(wall),
        },
        "command": command,
    }
    manifest_path(out).write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {out} and {manifest_path(out)}")
    return manifest


def _weighted(losses: dict[str, float], sizes: dict[str, int]) -> float:
    return sum(losses[s] * sizes[s] for s in losses) / sum(sizes.values())


def _corpus_description(docs: list[Document], split: Split) -> dict[str, Any]:
    text = "\n\n".join(f"{d.source}/{d.name}\n{d.text}" for d in docs).encode("utf-8")
    return {
        "sources": {
            "pydoc": "CPython pydoc_data.topics (Python documentation topics), one document per topic; "
            "typographic quotes and dashes spelled in ASCII",
            "notes": "tools/corpus/*.txt: plain-English notes on caches, memory, paging, operating systems "
            "and LLM serving; one document per paragraph",
        },
        "bytes": {s: {"train": len(split.train[s]), "val": len(split.val[s])} for s in split.train},
        "val_documents": split.val_names,
        "sha256": hashlib.sha256(text).hexdigest(),
    }


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m tools.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, help=f"optimizer steps (default {TrainConfig.steps})")
    parser.add_argument("--seed", type=int, default=TrainConfig.seed)
    parser.add_argument(
        "--out",
        type=Path,
        help=f"weights file (default {DEFAULT_WEIGHTS_PATH}; with --quick, a temporary directory)",
    )
    parser.add_argument("--quick", action="store_true", help="a tiny run (seconds) to test the pipeline")
    for name in ("lr", "batch_size", "context", "notes_per_batch"):  # for tuning; the defaults are the recipe
        kind = type(getattr(TrainConfig, name))
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=kind, help=f"default {getattr(TrainConfig, name)}"
        )
    args = parser.parse_args(argv)
    overrides = dict(QUICK) if args.quick else {}
    for name in ("steps", "lr", "batch_size", "context", "notes_per_batch"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    cfg = TrainConfig(seed=args.seed, **overrides)
    out = args.out or (
        Path(tempfile.gettempdir()) / "kvviz-train-quick" / "model.pt" if args.quick else DEFAULT_WEIGHTS_PATH
    )
    train(cfg, out, command=shlex.join(["python", "-m", "tools.train", *argv]))


if __name__ == "__main__":
    main()
