"""The Triton paged-KV kernels' argument checks (kernels/_checks.py): every bad argument refused
with a message before a launch; and what importing the package and its references loads.

Set up as tests/kernels/test_kernels.py is: TRITON_INTERPRET=1 on a machine without CUDA, set
here before triton or the kernel modules are imported.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest
import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")

# A kernel module imported earlier in this process (e.g. through an engine test) was decorated for
# whatever TRITON_INTERPRET was then; reloading re-decorates it for the setting above.
for _name in ("kernels.store_kv_kernel", "kernels.decode_attention", "kernels.extend_attention"):
    if _name in sys.modules:
        importlib.reload(sys.modules[_name])

from paged_kv_support import DEVICE, HEAD_DIM, make_paged_kv  # noqa: E402

from kernels import _checks, paged_decode_attention, paged_extend_attention, store_kv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------------------------------------
# argument checks


def _decode_args(**changes):
    kv = make_paged_kv([5, 9], 4, 2, torch.float32, torch.Generator().manual_seed(10))
    args = dict(q=torch.randn(2, 4, HEAD_DIM, device=DEVICE), k_cache=kv.k_cache, v_cache=kv.v_cache,
                block_tables=kv.block_tables, seq_lens=kv.seq_lens, scale=1.0)
    args.update({name: change(args) for name, change in changes.items()})
    return args


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"q": lambda a: a["q"][:, :3]}, r"num_heads \(3\) must be a multiple of num_kv_heads \(2\)"),
        ({"q": lambda a: a["q"].half()}, r"q and the caches must have the same dtype"),
        ({"q": lambda a: a["q"][..., :8]}, r"q must have shape \(2, 4, 16\)"),
        ({"v_cache": lambda a: a["v_cache"].half()}, r"k_cache and v_cache must have the same dtype"),
        ({"k_cache": lambda a: a["k_cache"][0]}, r"k_cache must be 4-D"),
        ({"block_tables": lambda a: a["block_tables"].float()},
         r"block_tables must have dtype in \(int32, int64\)"),
        ({"seq_lens": lambda a: a["seq_lens"][:1]}, r"seq_lens must have shape \(2,\)"),
        ({"seq_lens": lambda a: a["seq_lens"] + 100}, r"seq_lens has value 105 outside \[1, "),
        ({"block_tables": lambda a: a["block_tables"] + 1000}, r"block_tables \(pages in use\) has value"),
        ({"block_reads": lambda a: torch.zeros(a["k_cache"].shape[0], dtype=torch.int64)},
         r"block_reads must have dtype in \(int32\)"),
    ],
)
def test_decode_rejects_bad_arguments(changes, message):
    args = _decode_args(**changes)
    if DEVICE.type == "cuda" and "value" in message:
        pytest.skip("index values are checked on CPU only")
    with pytest.raises(ValueError, match=message):
        paged_decode_attention(**args)


def test_decode_rejects_bad_num_splits():
    with pytest.raises(ValueError, match="num_splits must be a positive int or None, got 0"):
        paged_decode_attention(**_decode_args(), num_splits=0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"q": lambda a: a["q"][:, :3]}, r"num_heads \(3\) must be a multiple of num_kv_heads \(2\)"),
        ({"q": lambda a: a["q"].half()}, r"q and the caches must have the same dtype"),
        ({"q": lambda a: a["q"][..., :8]},
         r"q must have shape \(2, 4, 16\) \(total_new, num_heads, head_dim of"),
        ({"block_tables": lambda a: a["block_tables"].float()},
         r"block_tables must have dtype in \(int32, int64\)"),
        ({"query_start": lambda a: a["query_start"][:2]}, r"query_start must have shape \(3,\)"),
        ({"seq_lens": lambda a: a["seq_lens"][:1]}, r"seq_lens must have shape \(2,\)"),
    ],
)
def test_extend_rejects_bad_arguments_as_decode_does(changes, message):
    args = _decode_args(query_start=lambda a: torch.tensor([0, 1, 2], dtype=torch.int32, device=DEVICE))
    args.update({name: change(args) for name, change in changes.items()})
    with pytest.raises(ValueError, match=message):
        paged_extend_attention(**args)


def test_decode_needs_one_block_table_row_per_query():
    args = _decode_args(block_tables=lambda a: a["block_tables"][:1])
    with pytest.raises(ValueError,
                       match=r"block_tables must have one row per sequence \(2\), got shape \(1, "):
        paged_decode_attention(**args)


def test_extend_rejects_query_start_not_covering_q():
    args = _decode_args()
    query_start = torch.tensor([0, 1, 3], dtype=torch.int32, device=DEVICE)
    with pytest.raises(ValueError, match=r"query_start must run from 0 to total_new \(2\), got 0 \.\. 3"):
        paged_extend_attention(args["q"], args["k_cache"], args["v_cache"], args["block_tables"], query_start,
                               args["seq_lens"], 1.0)


@pytest.mark.parametrize(
    ("k_shape", "slot", "slot_dtype", "message"),
    [
        ((3, 2, HEAD_DIM), 0, torch.int64, r"k must have shape \(1, 2, 16\)"),
        ((1, 2, HEAD_DIM), 0, torch.float32, r"slot_mapping must have dtype in \(int32, int64\)"),
        ((1, 2, HEAD_DIM), 40, torch.int32, r"slot_mapping has value 40 outside \[0, 40\)"),
    ],
)
def test_store_kv_rejects_bad_arguments(k_shape, slot, slot_dtype, message):
    if DEVICE.type == "cuda" and "value" in message:
        pytest.skip("index values are checked on CPU only")
    cache = torch.zeros(10, 4, 2, HEAD_DIM, device=DEVICE)
    k = torch.zeros(k_shape, device=DEVICE)
    with pytest.raises(ValueError, match=message):
        store_kv(cache, cache.clone(), k, k, torch.tensor([slot], dtype=slot_dtype, device=DEVICE))


def test_cpu_launch_without_interpreter_is_refused_with_a_hint():
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        _checks.check_launchable(torch.device("cpu"), kernel=object())


def test_importing_the_references_does_not_import_triton():
    code = "import sys, kernels.reference; assert 'triton' not in sys.modules"
    env = {**os.environ, "PYTHONPATH": ROOT}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)


def test_importing_the_package_does_not_import_triton():
    code = "import sys, kernels; assert 'triton' not in sys.modules"
    env = {**os.environ, "PYTHONPATH": ROOT}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)


def test_package_attributes_are_the_wrappers_of_their_submodules():
    import kernels

    for name, module in [
        ("store_kv", "kernels.store_kv_kernel"),
        ("paged_decode_attention", "kernels.decode_attention"),
        ("paged_extend_attention", "kernels.extend_attention"),
    ]:
        importlib.import_module(module)
        assert getattr(kernels, name) is getattr(sys.modules[module], name)
    with pytest.raises(AttributeError, match="module 'kernels' has no attribute 'store'"):
        kernels.store  # noqa: B018
