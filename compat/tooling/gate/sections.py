# SPDX-License-Identifier: Apache-2.0
"""Facts a gate report gets beyond the config diff, each from its own module: the package metadata (metadata.py),
value renames (aliases.py), upstream commits for a checkout (blame.py) and the plain-install outcome of the pin
before the candidate (compat/tooling/data/install.json, written by the smoke-<version> nox sessions)."""
from __future__ import annotations

from pathlib import Path

from ... import version as _v
from ...configs import CONFIGS
from ...errors import CompatError, VersionError
from ...registry import Registry
from ..data_files import load_json
from .diff import LEVELS
from .policy import order


def install_record(against: str) -> dict | None:
    """The recorded plain install of the newest pin at or before ``against`` (install.json), or None."""
    try:
        pins = load_json("install.json")["pins"]
        older = [v for v, rec in pins.items() if isinstance(rec, dict) and isinstance(rec.get("install"), str)
                 and not _v.is_newer(v, against)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, VersionError):
        return None  # no usable plain-install data: the report has no Install section
    if not older:
        return None
    pin = _v.newest(older)
    rec = pins[pin]
    imports = rec.get("imports") if isinstance(rec.get("imports"), dict) else {}
    return {**{k: v for k, v in rec.items() if isinstance(v, str) or v is None}, "pin": pin,
            "imports": {str(m): str(v) for m, v in imports.items()},
            "undeclared": [str(m) for m in rec.get("undeclared") or [] if isinstance(m, str)],
            "imports_with_undeclared": {str(m): str(v) for m, v in (rec.get("imports_with_undeclared") or {}).items()}
            if isinstance(rec.get("imports_with_undeclared"), dict) else {}}


def add_sections(report, path: Path, reg: Registry) -> None:
    from .aliases import alias_changes, value_rewrites
    from .blame import attach_commits
    from .metadata import candidate_metadata, metadata_changes, registry_metadata

    old, new = registry_metadata(report.against), candidate_metadata(path)
    changes, why = metadata_changes(old, new)
    report.sections["metadata"] = {"candidate": new, "against": old, "not_compared": why}
    try:
        rewrites = value_rewrites(path)
    except CompatError:
        rewrites = []
    bases = {key: reg.schema(report.against, config=key) for key in CONFIGS if reg.has(report.against, config=key)}
    changes += alias_changes(rewrites, bases)
    report.changes += changes
    rank, configs = {level: i for i, level in enumerate(LEVELS)}, order()
    report.changes.sort(key=lambda c: (rank[c.level], configs.index(c.config) if c.config in configs else -1))
    attach_commits(report, Path(path))
    report.sections["install"] = install_record(report.against)
    from .companions.gate_section import companions_section

    report.sections["companions"] = companions_section(Path(path))
