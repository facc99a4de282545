# SPDX-License-Identifier: Apache-2.0
"""The equivalence lane's verdict in a gate report: does training on the candidate give the bits of the pin before it?

Data: ``compat/tooling/data/training_lane.json`` (written by ``tests/equiv/lane.py verdicts`` from the lane's results; the lane
itself is ``nox -s equiv``: one tiny GPTModel, the same weights, batches and config on every pin, compared bit for bit).
"""
from __future__ import annotations

from ..text import md_code, md_prose
from .lanes import opening, pair_for, section

VARIANT_NAMES = {"canonical": "the canonical config (drifting defaults pinned)",
                 "defaults": "each release's own defaults"}
_PAIR_SHAPE = {"old": str, "new": str, "variants": dict}


def lane_verdict(candidate: str | None, against: str) -> dict | None:
    """The lane's pair that ends on ``candidate`` (from ``against`` when there is one), a "not run" record naming the
    session that would produce it, or None when nothing can be said (no PEP 440 version, nothing newer)."""
    return pair_for(candidate, against, "training_lane.json", "old", "new", "equiv", pair_shape=_PAIR_SHAPE)


def sentences(verdict: dict | None) -> list[str]:
    """E.g. "training with each release's own defaults on `0.18.2` and `0.19.2` is bit-identical (12 steps ...)"."""
    opened = opening(verdict, "old", "new", "equivalence-lane")
    if opened is None or opened[2]:
        return opened[2] if opened else []
    old, new, lines = opened
    for vid, v in verdict["variants"].items():
        name = VARIANT_NAMES.get(vid, md_code(vid))
        if v["status"] == "identical":
            lines.append(f"training with {name} on {old} and {new} is bit-identical (loss, grads, grad norm, "
                         "parameters at every step)")
        else:
            why = f": {md_prose(v['why'])}" if v.get("why") else ""
            flag = "" if v["status"] == "expected" else "UNEXPECTED: "
            lines.append(f"{flag}training with {name} differs between {old} and {new} from "
                         f"{md_prose(v['first'])} ({md_prose(v['status'])}){why}")
    return lines


def markdown_section(report) -> list[str]:
    """The report's "Training" section (empty when there is nothing to say)."""
    return section("Training", report, lane_verdict, sentences)
