"""The C kernels for the CPU (kernels/cpu/*.c), compiled into one library on first use and loaded
through ctypes; kernels/cpu_native.py (decode attention), kernels/cpu_extend.py (extend attention),
engine/native_forward.py (the whole model's forward for a small batch) and kernels/cpu_layer.py (a
layer's small operations, for engine/fused.py's forward) call them.

The C files are compiled by the machine's C compiler (`$CC`, else `cc`), for this CPU
(`-march=native`), into a cache keyed by the sources, the flags, the compiler and the CPU
(`$KVVIZ_NATIVE_CACHE`, else ~/.cache/kvviz/native). With no compiler, or a failed build, `load()`
holds no functions and says why; the engine then uses the torch references (engine/backend.py).
`KVVIZ_NATIVE=0` turns the C off.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SOURCES = tuple(Path(__file__).resolve().parent / "cpu" / name
                for name in ("paged_decode.c", "paged_extend.c", "forward.c", "fused_layer.c"))
# Compiled, then linked apart: -ffast-math lets the loops marked `omp simd` vectorize (sums in another
# order; expf as glibc's vector expf) but, given when linking, would also link crtfastmath.o, whose
# start-up code would set the whole process's floats to flush denormals to zero (torch's too).
# -fopenmp-simd: the pragmas only, no threads and no OpenMP runtime.
COMPILE_FLAGS = ("-O3", "-march=native", "-ffast-math", "-fopenmp-simd", "-fPIC")
# fused_layer.c's RoPE and residual adds give torch's floats bit for bit: no -ffast-math there, and no
# fused multiply-adds (each product rounded, as torch's separate operations round it).
PRECISE_FLAGS = ("-O3", "-march=native", "-fno-math-errno", "-ffp-contract=off", "-fopenmp-simd", "-fPIC")
PRECISE = ("fused_layer.c",)
LINK_FLAGS = ("-shared", "-lmvec", "-lm")


def cache_dir() -> Path:
    if os.environ.get("KVVIZ_NATIVE_CACHE"):
        return Path(os.environ["KVVIZ_NATIVE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kvviz" / "native"


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return platform.processor()


def _compiler() -> str | None:
    return shutil.which(os.environ.get("CC") or "cc")


def _build(cc: str) -> Path:
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    texts = [f"{p.name}\0{p.read_text()}" for p in SOURCES]
    key = hashlib.sha256("\0".join([*texts, *COMPILE_FLAGS, *PRECISE_FLAGS, *LINK_FLAGS, version,
                                    platform.machine(), _cpu_flags()]).encode())
    lib = cache_dir() / f"attention-{key.hexdigest()[:16]}.so"
    if lib.exists():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    # built beside its final name, then renamed: processes building at once each get a whole file
    with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
        objs = [str(Path(tmp) / f"{src.stem}.o") for src in SOURCES]
        so = Path(tmp) / "attention.so"
        cmds = [[cc, *(PRECISE_FLAGS if src.name in PRECISE else COMPILE_FLAGS), "-c", str(src), "-o", obj]
                for src, obj in zip(SOURCES, objs, strict=True)]
        for cmd in [*cmds, [cc, *objs, "-o", str(so), *LINK_FLAGS]]:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-2000:]}")
        os.replace(so, lib)
    return lib


@dataclass(frozen=True)
class Library:
    """The loaded kernels (None each when the C is not available, and `reason` says why)."""

    decode: Callable[..., None] | None
    extend: Callable[..., None] | None
    reason: str
    forward: Callable[..., None] | None = None  # a small batch's forward (engine/native_forward.py)
    forward_scratch: Callable[..., int] | None = None  # the floats of scratch `forward` needs
    # fused_layer.c's (kernels/cpu_layer.py calls them)
    rope_store: Callable[..., None] | None = None
    decode_layer: Callable[..., None] | None = None
    add_rms_norm: Callable[..., None] | None = None


@functools.cache
def load() -> Library:
    if os.environ.get("KVVIZ_NATIVE") == "0":
        return Library(None, None, "KVVIZ_NATIVE=0 turns the C kernel off")
    cc = _compiler()
    if cc is None:
        return Library(None, None, f"no C compiler ({os.environ.get('CC') or 'cc'}) on PATH")
    try:
        lib = ctypes.CDLL(str(_build(cc)))
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return Library(None, None, f"the C kernel could not be built or loaded: {exc}")
    i64, ptr, f32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float
    decode, extend = lib.kvviz_paged_decode, lib.kvviz_paged_extend
    # (q, k, v, block_tables, bt_stride, seq_lens, num_seqs, num_heads, num_kv_heads, head_dim, block_size,
    #  scale, out, scratch)
    decode.argtypes = [ptr, ptr, ptr, ptr, i64, ptr, i64, i64, i64, i64, i64, f32, ptr, ptr]
    # (q, k, v, block_tables, bt_stride, query_start, seq_lens, num_seqs, num_heads, num_kv_heads, head_dim,
    #  block_size, scale, out, scores scratch)
    extend.argtypes = [ptr, ptr, ptr, ptr, i64, ptr, ptr, i64, i64, i64, i64, i64, f32, ptr, ptr]
    forward, scratch = lib.kvviz_forward, lib.kvviz_forward_scratch
    # (tokens, positions, slots, rows, query_start, seqs, decode, block_tables, bt_stride, seq_lens, embed,
    #  layers, num_layers, k_caches, v_caches, cos, sin, final_norm, lm_head, vocab, d, heads, kv_heads,
    #  head_dim, ff, block_size, eps, scale, logits, scratch)
    forward.argtypes = [ptr, ptr, ptr, i64, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, i64, ptr, ptr, ptr, ptr,
                        ptr, ptr, i64, i64, i64, i64, i64, i64, i64, f32, f32, ptr, ptr]
    # (rows, d, heads, kv_heads, head_dim, ff, max_len)
    scratch.argtypes = [i64] * 7
    scratch.restype = i64
    rope_store, decode_layer = lib.kvviz_rope_store, lib.kvviz_decode_layer
    add_rms_norm = lib.kvviz_add_rms_norm
    # (qkv, cos, sin, positions, slots, rows, num_heads, num_kv_heads, head_dim, k, v, q)
    rope_store.argtypes = [ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64, ptr, ptr, ptr]
    # (rope_store's, then block_tables, bt_stride, seq_lens, block_size, scale, out, scores scratch)
    decode_layer.argtypes = [*rope_store.argtypes, ptr, i64, ptr, i64, f32, ptr, ptr]
    # (h, a or NULL, weight, rows, dim, eps, out)
    add_rms_norm.argtypes = [ptr, ptr, ptr, i64, i64, f32, ptr]
    for fn in (decode, extend, forward, rope_store, decode_layer, add_rms_norm):
        fn.restype = None
    return Library(decode, extend, "", forward, scratch, rope_store, decode_layer, add_rms_norm)
