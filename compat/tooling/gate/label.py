# SPDX-License-Identifier: Apache-2.0
"""What the candidate's version label says: a registry release it claims to be, and the pin before it.

A candidate whose label names a registry release but whose config differs (a `dev` checkout saying 0.19.0, a wheel
claiming 0.13.1 with other config) is told so at the top of the report, with what differs. A candidate that *is* a
registry release (``gate latest`` on a fresh clone) is compared with the pin before it in matrix.yaml: what adopting
it means for a project on that pin.
"""
from __future__ import annotations

from collections.abc import Iterable

from ... import version as _v
from ...errors import VersionError
from ...registry import Registry

SHOWN = 8  # differences listed by name at the top of the report


def claimed_release(reg: Registry, version: str | None) -> str | None:
    """The registry release the candidate's version names (0.19.2.0 names 0.19.2), or None."""
    if not version:
        return None
    try:
        release, how = _v.match_release(version, reg.versions())
    except VersionError:
        return None
    return release if how in ("exact", "local") else None


def label_record(claimed: str, changes: list) -> dict:
    """``{"claims", "differs", "changes", "shown"}``: the differences from the claimed release, by name."""
    shown = [f"{c.field} ({c.config}): {c.what}" for c in changes[:SHOWN]]
    return {"claims": claimed, "differs": bool(changes), "changes": len(changes), "shown": shown}


def previous_pin(version: str, pinned: Iterable[str] | None) -> str | None:
    """The newest pinned version older than ``version`` (``pinned``: the test matrix's pins, oldest first, from the
    matrix tools); None without pins."""
    older = [p for p in pinned or () if _v.is_newer(version, p)]
    return older[-1] if older else None
