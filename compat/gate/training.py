"""The equivalence lane's verdict in a gate report: does training on the candidate give the bits of the pin before it?

Data: ``compat/data/training_lane.json`` (written by ``tests/equiv/lane.py verdicts`` from the lane's results; the lane
itself is ``nox -s equiv``: one tiny GPTModel, the same weights, batches and config on every pin, compared bit for bit).
"""
from __future__ import annotations

from .. import version as _v
from ..errors import VersionError
from ..registry import load_json
from .markdown import md_code, md_prose

VARIANT_NAMES = {"canonical": "the canonical config (drifting defaults pinned)",
                 "defaults": "each release's own defaults"}


def _same(a, b) -> bool:
    return not _v.is_newer(a, b) and not _v.is_newer(b, a)


def lane_verdict(candidate: str | None, against: str) -> dict | None:
    """The lane's pair that ends on ``candidate`` (from ``against`` when there is one), a "not run" record naming the
    session that would produce it, or None when nothing can be said (no PEP 440 version, nothing newer)."""
    if not candidate:
        return None
    try:
        _v.parse(candidate)
    except VersionError:
        return None
    try:
        pairs = load_json("training_lane.json")["pairs"]
    except (OSError, ValueError, KeyError):
        pairs = []
    into = [p for p in pairs if _same(p["new"], candidate)]
    if into:
        return {**next((p for p in into if _same(p["old"], against)), into[-1]), "status": "measured"}
    if _v.is_newer(candidate, against):
        return {"old": against, "new": candidate, "status": "not run", "session": "equiv"}
    return None


def sentences(verdict: dict | None) -> list[str]:
    """E.g. "training with each release's own defaults on `0.18.2` and `0.19.2` is bit-identical (12 steps ...)"."""
    if verdict is None:
        return []
    old, new = md_code(verdict["old"]), md_code(verdict["new"])
    if verdict["status"] == "not run":
        return [f"no equivalence-lane result for {old} → {new} yet: after `--accept`, run `nox -s {verdict['session']}`"]
    lines = []
    for vid, v in verdict["variants"].items():
        name = VARIANT_NAMES.get(vid, md_code(vid))
        if v["status"] == "identical":
            lines.append(f"training with {name} on {old} and {new} is bit-identical (loss, grads, grad norm, "
                         "parameters at every step)")
        else:
            why = f": {md_prose(v['why'])}" if v.get("why") else ""
            flag = "" if v["status"] == "expected" else "**"
            lines.append(f"{flag}training with {name} differs between {old} and {new} from "
                         f"{md_prose(v['first'])}{flag} ({md_prose(v['status'])}){why}")
    return lines


def markdown_section(report) -> list[str]:
    """The report's "Training" section (empty when there is nothing to say)."""
    lines = sentences(lane_verdict(report.facts.get("version"), report.against))
    return ["", "## Training", "", *[f"- {line}" for line in lines]] if lines else []
