"""Compare two pins' training records: identical bits, or where they first part and by how much.

A record is lane.py's per-pin ``record.json`` variant entry (rank 0's steps, the initial hashes, memory per rank).
The walk goes in the order the numbers arise: the initial weights, then per step the loss, every reduced grad (in
the older pin's parameter order), the grad norm, the zeros in grads, every parameter after the step. The first
mismatch is the "first difference"; ``size`` reads the two tensors from the pins' ``.pt`` files when they are there
(torch only then). Stdlib otherwise, so the unit tests run it on hand-made records.
"""
from __future__ import annotations

import math
import os

SCALARS = ("loss", "grad_norm", "num_zeros")


def first_difference(old: dict, new: dict) -> dict | None:
    """None when the two runs are bit-identical; else {"step", "what", "tensor", "old", "new"}."""
    if old["param_names"] != new["param_names"]:
        only_old = sorted(set(old["param_names"]) - set(new["param_names"]))
        only_new = sorted(set(new["param_names"]) - set(old["param_names"]))
        what = "parameter names" if only_old or only_new else "parameter order"
        return {"step": None, "what": what, "tensor": None, "old": only_old[:4], "new": only_new[:4]}
    for name in old["param_names"]:
        if old["initial_sha256"].get(name) != new["initial_sha256"].get(name):
            return {"step": None, "what": "initial weights", "tensor": name, "old": None, "new": None}
    for a, b in zip(old["steps"], new["steps"]):
        step = a["step"]
        if a["loss_hex"] != b["loss_hex"]:
            return {"step": step, "what": "loss", "tensor": None, "old": a["loss"], "new": b["loss"]}
        for name in old["param_names"]:
            if a["grad_sha256"][name] != b["grad_sha256"][name]:
                return {"step": step, "what": "grad", "tensor": name, "old": None, "new": None}
        for key in SCALARS[1:]:
            if a[key] != b[key]:
                return {"step": step, "what": key, "tensor": None, "old": a[key], "new": b[key]}
        for name in old["param_names"]:
            if a["param_sha256"][name] != b["param_sha256"][name]:
                return {"step": step, "what": "param", "tensor": name, "old": None, "new": None}
    if len(old["steps"]) != len(new["steps"]):
        return {"step": min(len(old["steps"]), len(new["steps"])), "what": "number of steps", "tensor": None,
                "old": len(old["steps"]), "new": len(new["steps"])}
    return None


def scalar_size(a, b) -> dict:
    if a is None or b is None:
        return {"abs": None, "rel": None}
    diff = abs(float(a) - float(b))
    scale = max(abs(float(a)), abs(float(b)))
    return {"abs": diff, "rel": diff / scale if scale else (0.0 if diff == 0 else math.inf)}


def size(first: dict, old_pt: str | None, new_pt: str | None) -> dict:
    """How large the first difference is: |a - b| (and relative) for a scalar; for a tensor the max abs difference,
    the relative L2 difference and how many elements differ (from the .pt files; None without them)."""
    if first["tensor"] is None or first["step"] is None:
        return scalar_size(first.get("old"), first.get("new")) if first["what"] in SCALARS else {}
    if not (old_pt and new_pt and os.path.exists(old_pt) and os.path.exists(new_pt)):
        return {"max_abs": None, "note": "tensor files not available"}
    import torch

    kind = "grads" if first["what"] == "grad" else "params"
    a = torch.load(old_pt)["steps"][first["step"]][kind][first["tensor"]].double()
    b = torch.load(new_pt)["steps"][first["step"]][kind][first["tensor"]].double()
    delta = (a - b).abs()
    norm = float(a.norm())
    return {"max_abs": float(delta.max()), "rel_l2": float((a - b).norm()) / norm if norm else None,
            "elements_differ": int((delta > 0).sum()), "elements": int(delta.numel())}


def loss_gap(old: dict, new: dict) -> dict:
    """The largest |loss_old - loss_new| over the steps, and at which step (0 when identical)."""
    gaps = [(abs(a["loss"] - b["loss"]), a["step"]) for a, b in zip(old["steps"], new["steps"])]
    worst = max(gaps, default=(0.0, None))
    return {"max_abs": worst[0], "step": worst[1]}


def memory_changes(old: dict, new: dict) -> dict:
    """Per byte count that differs on any rank: {key: [old per rank, new per rank]}."""
    out = {}
    for key in sorted({k for m in old["memory"] + new["memory"] for k in m}):
        a = [m.get(key) for m in old["memory"]]
        b = [m.get(key) for m in new["memory"]]
        if a != b:
            out[key] = [a, b]
    return out


def config_changes(old_built: dict, new_built: dict) -> dict:
    """The built configs' values that differ between the pins, for fields both have: {config: {field: [a, b]}}."""
    out = {}
    for config in sorted(set(old_built) & set(new_built)):
        a, b = old_built[config], new_built[config]
        changed = {f: [a[f], b[f]] for f in sorted(set(a) & set(b)) if a[f] != b[f]}
        if changed:
            out[config] = changed
    return out


def describe(first: dict | None) -> str:
    """One line, e.g. "step 3: grad of decoder.layers.0.mlp.linear_fc1.weight" (matched by expected.yaml)."""
    if first is None:
        return "identical"
    where = "before training" if first["step"] is None else f"step {first['step']}"
    what = first["what"] + (f" of {first['tensor']}" if first.get("tensor") else "")
    return f"{where}: {what}"
