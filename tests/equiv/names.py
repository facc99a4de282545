"""Stable parameter names and the lane's initial weights (identical on every pin: they depend on the name only).

A parameter's stable name is its module path without the wrappers (``module.`` of Float16Module and DDP), with the
renames of ``renames.json`` applied (a release that moved a module keeps its weights). Stdlib at import time.
"""
from __future__ import annotations

import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
RENAMES_FILE = os.path.join(HERE, "renames.json")
INIT_STD = 0.02


def _renames() -> list[dict]:
    with open(RENAMES_FILE, encoding="utf-8") as fh:
        return json.load(fh)["renames"]


_RENAMES = _renames()


def canonical_name(raw: str) -> str:
    name = raw
    while name.startswith("module."):
        name = name[len("module."):]
    for entry in _RENAMES:
        if entry["old"] in name:
            name = name.replace(entry["old"], entry["new"])
    return name


def initial_tensor(name: str, shape: list[int], seed: int):
    """The full fp32 initial tensor of parameter ``name``: norms' weights 1, biases 0, every other weight
    N(0, INIT_STD) from a generator seeded by the name (so two releases with other parameter orders agree)."""
    import torch

    if name.endswith("bias"):
        return torch.zeros(shape)
    leaf = name.rsplit(".", 2)
    if any("norm" in part for part in leaf[-2:]):
        return torch.ones(shape)
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    gen = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))
    return torch.randn(shape, generator=gen) * INIT_STD


def sha256_of(tensor) -> str:
    """sha256 of a tensor's exact bytes (bf16 read as int16: numpy has no bfloat16)."""
    import torch

    t = tensor.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return hashlib.sha256(t.numpy().tobytes()).hexdigest()
