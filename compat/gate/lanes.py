"""What a lane measured for the pair that ends on the gate's candidate (shared by the Checkpoints and Training sections)."""
from __future__ import annotations

from .. import version as _v
from ..errors import VersionError
from ..registry import load_json


def same_release(a, b) -> bool:
    return not _v.is_newer(a, b) and not _v.is_newer(b, a)


def pair_for(candidate: str | None, against: str, data_file: str, old_key: str, new_key: str,
             session: str) -> dict | None:
    """The pair of ``data_file`` whose ``new_key`` is ``candidate`` (and ``old_key`` is ``against`` when there is
    one), with status "measured"; a "not run" record naming ``session`` for a newer candidate the lane has not seen;
    None when nothing can be said (no version, a version that is not PEP 440, an older candidate)."""
    if not candidate:
        return None
    try:
        _v.parse(candidate)
    except VersionError:
        return None  # a METADATA version that is not PEP 440: the report shows it as given, escaped
    try:
        pairs = load_json(data_file)["pairs"]
    except (OSError, ValueError, KeyError):
        pairs = []
    into = [p for p in pairs if same_release(p[new_key], candidate)]
    if into:
        return {**next((p for p in into if same_release(p[old_key], against)), into[-1]), "status": "measured"}
    if _v.is_newer(candidate, against):
        return {old_key: against, new_key: candidate, "status": "not run", "session": session}
    return None
