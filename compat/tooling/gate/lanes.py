# SPDX-License-Identifier: Apache-2.0
"""What a lane measured for the pair that ends on the gate's candidate (shared by the Checkpoints and Training sections).

A lane's data file (``compat/tooling/data/ckpt_lane.json``, ``compat/tooling/data/training_lane.json``) is written by the lane's own
tool; the gate checks its shape before reading it, and a malformed file gives an "unreadable" verdict: the report
goes out without that section and the CLI prints one warning line naming the file.
"""
from __future__ import annotations

from ... import version as _v
from ...errors import CompatError, VersionError
from ..data_files import DATA_DIR, load_json
from ..text import bullet_section, md_code


class LaneDataError(CompatError):
    """A lane's data file does not have the shape its writer gives it."""


def same_release(a, b) -> bool:
    return not _v.is_newer(a, b) and not _v.is_newer(b, a)


def lane_pairs(data_file: str, pair_shape: dict, entry_shape: dict, version_keys: tuple[str, str]) -> list[dict]:
    """The pairs of ``compat/tooling/data/<data_file>`` (none when the file is absent), checked against ``pair_shape``
    (key -> type), ``entry_shape`` (list key -> keys every entry has) and PEP 440 ``version_keys``."""
    name = f"{DATA_DIR}/{data_file}"
    try:
        data = load_json(data_file)
    except FileNotFoundError:
        return []
    except (OSError, ValueError, RecursionError) as exc:
        raise LaneDataError(f"{name} is unreadable: {exc}") from None
    pairs = data.get("pairs") if isinstance(data, dict) else None
    if not isinstance(pairs, list):
        raise LaneDataError(f"{name} has no list of pairs")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, dict) or any(not isinstance(pair.get(k), t) for k, t in pair_shape.items()):
            raise LaneDataError(f"{name}: pair {i} is not an object with {', '.join(pair_shape)}")
        for key, needed in entry_shape.items():
            if any(not isinstance(e, dict) or any(k not in e for k in needed) for e in pair[key]):
                raise LaneDataError(f"{name}: pair {i} has {key} without {', '.join(needed)}")
        try:
            for key in version_keys:
                _v.parse(pair[key])
        except VersionError as exc:
            raise LaneDataError(f"{name}: pair {i}: {exc}") from None
    return pairs


def pair_for(candidate: str | None, against: str, data_file: str, old_key: str, new_key: str, session: str, *,
             pair_shape: dict, entry_shape: dict | None = None) -> dict | None:
    """The pair of ``data_file`` whose ``new_key`` is ``candidate`` (and ``old_key`` is ``against`` when there is
    one), with status "measured"; a "not run" record naming ``session`` for a newer candidate the lane has not seen;
    ``{"status": "unreadable", "error": ...}`` for a malformed file; None when nothing can be said (no version, a
    version that is not PEP 440, an older candidate)."""
    if not candidate:
        return None
    try:
        _v.parse(candidate)
    except VersionError:
        return None  # a METADATA version that is not PEP 440: the report shows it as given, escaped
    try:
        pairs = lane_pairs(data_file, pair_shape, entry_shape or {}, (old_key, new_key))
    except LaneDataError as exc:
        return {"status": "unreadable", "error": str(exc)}
    into = [p for p in pairs if same_release(p[new_key], candidate)]
    if into:
        return {**next((p for p in into if same_release(p[old_key], against)), into[-1]), "status": "measured"}
    if _v.is_newer(candidate, against):
        return {old_key: against, new_key: candidate, "status": "not run", "session": session}
    return None


def opening(verdict: dict | None, old_key: str, new_key: str, lane: str) -> tuple[str, str, list[str]] | None:
    """(old, new, lines) of a section about ``verdict``: the pair's versions as code spans, and the one line for a
    pair the lane has not run yet (empty otherwise); None when there is nothing to say (no verdict, unreadable)."""
    if verdict is None or verdict["status"] == "unreadable":
        return None
    old, new = md_code(verdict[old_key]), md_code(verdict[new_key])
    if verdict["status"] == "not run":
        return old, new, [f"no {lane} result for {old} → {new} yet: after `--accept`, run "
                          f"`nox -s {verdict['session']}`"]
    return old, new, []


def section(title: str, report, verdict_of, sentences_of) -> list[str]:
    """A lane's report section: the sentences about its verdict for the pin before the candidate -> the candidate
    (empty when there is nothing to say)."""
    return bullet_section(title, sentences_of(verdict_of(report.facts.get("version"), report.against)))
