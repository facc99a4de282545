"""Bit-exact comparison of optimizer snapshots, per parameter name, on plain bytes (standard library only).

A *rank snapshot* is what one rank holds, as JSON-able data::

    {param_name: {key: {"dtype": "float32", "shape": [64, 64], "offset": 0, "data": "<base64>"}}}

``key`` is one of KEYS. ``shape`` is the full parameter's shape; ``offset`` is where this rank's piece starts
in the flattened parameter, in elements (a DistributedOptimizer shard; 0 for a full tensor); ``data`` holds the
piece's raw little-endian bytes. ``merge`` places the pieces of every rank, checks that they cover each tensor
exactly (no gap, no piece out of range, overlapping replicas identical) and returns one flat byte string per
(name, key); ``compare`` reports every difference. Comparing bytes makes "exact" mean every bit (a -0.0 or a NaN
payload counts), independent of bucket padding or of how a version shards the state.

It works on bytes, not tensors, so the unit tests of this logic run without torch (tests/ckpt/test_compare.py).
"""
from __future__ import annotations

import base64
from dataclasses import dataclass

KEYS = ("weight", "main", "exp_avg", "exp_avg_sq", "step")
ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int64": 8, "int32": 4, "uint8": 1, "bool": 1}


@dataclass(frozen=True)
class Diff:
    name: str  # parameter name
    key: str  # one of KEYS
    kind: str  # missing | unexpected | dtype | shape | bytes | gap | overlap | range | size
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.name}/{self.key}: {self.kind}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Tensor:
    dtype: str
    shape: tuple
    data: bytes

    @property
    def numel(self) -> int:
        n = 1
        for dim in self.shape:
            n *= dim
        return n


def encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def piece(dtype: str, shape, data: bytes, offset: int = 0) -> dict:
    """One rank's piece, as a worker writes it."""
    return {"dtype": dtype, "shape": list(shape), "offset": int(offset), "data": encode(data)}


def merge(rank_snapshots: list[dict]) -> tuple[dict, list[Diff]]:
    """{name: {key: Tensor}} from the pieces of every rank, and the problems found while placing them."""
    grouped: dict[str, dict[str, list[dict]]] = {}
    for snap in rank_snapshots:
        for name, entries in snap.items():
            for key, p in entries.items():
                grouped.setdefault(name, {}).setdefault(key, []).append(p)
    merged: dict[str, dict[str, Tensor]] = {}
    problems: list[Diff] = []
    for name in sorted(grouped):
        for key in sorted(grouped[name]):
            tensor, found = _place(name, key, grouped[name][key])
            problems += found
            if tensor is not None:
                merged.setdefault(name, {})[key] = tensor
    return merged, problems


def _place(name: str, key: str, pieces: list[dict]) -> tuple[Tensor | None, list[Diff]]:
    kinds = {(p["dtype"], tuple(p["shape"])) for p in pieces}
    if len(kinds) != 1:
        return None, [Diff(name, key, "dtype" if len({k[0] for k in kinds}) > 1 else "shape",
                           f"ranks disagree: {sorted(kinds)}")]
    dtype, shape = kinds.pop()
    if dtype not in ITEMSIZE:
        return None, [Diff(name, key, "dtype", f"unknown dtype {dtype!r}")]
    size = ITEMSIZE[dtype]
    numel = Tensor(dtype, shape, b"").numel
    buf = bytearray(numel * size)
    problems: list[Diff] = []
    spans = []
    for p in pieces:
        raw = base64.b64decode(p["data"])
        if len(raw) % size:
            problems.append(Diff(name, key, "size", f"{len(raw)} bytes is not a whole number of {dtype}"))
            continue
        start, count = int(p["offset"]), len(raw) // size
        if start < 0 or start + count > numel:
            problems.append(Diff(name, key, "range", f"piece [{start}, {start + count}) outside [0, {numel})"))
            continue
        spans.append((start, count, raw))
    covered = 0  # elements [0, covered) are placed
    for start, count, raw in sorted(spans, key=lambda s: s[0]):
        if start > covered:
            problems.append(Diff(name, key, "gap", f"elements [{covered}, {start}) held by no rank"))
        end = start + count
        overlap_end = min(end, covered)
        if overlap_end > start:  # a replica (or an overlapping shard) must hold the same bytes
            lo, hi = start * size, overlap_end * size
            if bytes(buf[lo:hi]) != raw[: hi - lo]:
                problems.append(Diff(name, key, "overlap",
                                     f"ranks hold different bytes for elements [{start}, {overlap_end})"))
        if end > covered:
            keep = max(start, covered)
            buf[keep * size:end * size] = raw[(keep - start) * size:]
            covered = end
    if spans and covered < numel:
        problems.append(Diff(name, key, "gap", f"elements [{covered}, {numel}) held by no rank"))
    if not spans:
        return None, problems
    return Tensor(dtype, shape, bytes(buf)), problems


def compare(expected: dict, actual: dict, keys=KEYS) -> list[Diff]:
    """Every difference between two merged states, per parameter name and key (an empty list: bit-identical)."""
    diffs: list[Diff] = []
    for name in sorted(set(expected) | set(actual)):
        exp, act = expected.get(name, {}), actual.get(name, {})
        for key in keys:
            a, b = exp.get(key), act.get(key)
            if a is None and b is None:
                continue
            if b is None:
                diffs.append(Diff(name, key, "missing"))
            elif a is None:
                diffs.append(Diff(name, key, "unexpected"))
            elif a.dtype != b.dtype:
                diffs.append(Diff(name, key, "dtype", f"{a.dtype} -> {b.dtype}"))
            elif a.shape != b.shape:
                diffs.append(Diff(name, key, "shape", f"{list(a.shape)} -> {list(b.shape)}"))
            elif a.data != b.data:
                diffs.append(Diff(name, key, "bytes", _first_difference(a, b)))
    return diffs


def _first_difference(a: Tensor, b: Tensor) -> str:
    size = ITEMSIZE[a.dtype]
    differing = [i for i in range(a.numel) if a.data[i * size:(i + 1) * size] != b.data[i * size:(i + 1) * size]]
    return f"{len(differing)} of {a.numel} elements differ, first at {differing[0]}"


def incomplete(state: dict, keys=KEYS) -> list[Diff]:
    """(name, key) pairs a merged state lacks: a snapshot without them proves nothing about them."""
    return [Diff(name, key, "missing") for name in sorted(state) for key in keys if key not in state[name]]


def unchanged(before: dict, after: dict, keys=KEYS) -> list[Diff]:
    """Entries of ``after`` that ``before`` already held bit-identically (a load could not be told from a no-op)."""
    same = []
    for name in sorted(after):
        for key in keys:
            a, b = before.get(name, {}).get(key), after[name].get(key)
            if a is not None and b is not None and (a.dtype, a.shape, a.data) == (b.dtype, b.shape, b.data):
                same.append(Diff(name, key, "unchanged"))
    return same


def summarize(diffs: list[Diff], limit: int = 6) -> str:
    """One line: which keys differ in how many params, then the first few differences."""
    by_key: dict[str, set] = {}
    for d in diffs:
        by_key.setdefault(f"{d.key} {d.kind}", set()).add(d.name)
    head = ", ".join(f"{k} in {len(v)} params" for k, v in sorted(by_key.items()))
    more = "" if len(diffs) <= limit else f" (+{len(diffs) - limit} more)"
    return f"{head}: " + "; ".join(str(d) for d in diffs[:limit]) + more
