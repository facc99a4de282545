# SPDX-License-Identifier: Apache-2.0
"""The package's own metadata in the gate: Requires-Python and Requires-Dist (extras and markers) against the registry
release's, as changes with levels.

The registry releases' metadata is ``compat/tooling/data/metadata.json`` (built from the real wheels by tools/metadata.py,
kept apart from registry.json). A wheel's METADATA or an sdist's PKG-INFO is read bounded; a checkout's
pyproject.toml ``[project]`` table gives the same facts (``requires-python``, ``dependencies``,
``optional-dependencies``).

Levels: a Requires-Python or base-dependency bound that excludes versions the old one allowed is breaking (users on
them can no longer install it); a new base dependency needs a decision; extras change what ``pip install
megatron-core[extra]`` pulls and are informational unless a bound narrows (a decision).
"""
from __future__ import annotations

import re

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..archive import MIB, open_source
from ..data_files import load_json
from .diff import BREAKING, DECISION, INFO, Change

PACKAGE = "(package)"
MAX_PYPROJECT_BYTES = 1 * MIB
PYTHONS = tuple(f"3.{minor}" for minor in range(8, 16))  # the interpreters a Requires-Python change is told for


def registry_metadata(version: str) -> dict | None:
    """``{"requires_python", "requires_dist"}`` of a registry release, or None when metadata.json lacks it."""
    try:
        entry = load_json("metadata.json")["releases"].get(version)
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("requires_dist", []), list):
        return None
    rp = entry.get("requires_python")
    return {"requires_python": rp if isinstance(rp, str) else None,
            "requires_dist": [r for r in entry.get("requires_dist", []) if isinstance(r, str)]}


def candidate_metadata(path) -> dict | None:
    """The candidate's Requires-Python and Requires-Dist; None when it has no metadata to read (a bare tree)."""
    source = open_source(path)
    if source.kind == "tree":
        return _from_pyproject(source.read("pyproject.toml", MAX_PYPROJECT_BYTES)) \
            if source.find("pyproject.toml") else None
    headers = source.metadata_headers(("Requires-Python", "Requires-Dist"))
    if not headers and not source.metadata():
        return None
    return {"requires_python": (headers.get("Requires-Python") or [None])[-1],
            "requires_dist": headers.get("Requires-Dist", [])}


def _from_pyproject(raw: bytes) -> dict | None:
    try:
        import tomllib
    except ImportError:  # Python 3.10: no TOML reader in the stdlib
        return None
    try:
        project = tomllib.loads(raw.decode("utf-8", "replace")).get("project", {})
    except (tomllib.TOMLDecodeError, RecursionError):
        return None
    if not isinstance(project, dict):
        return None
    dist = [str(d) for d in project.get("dependencies", []) if isinstance(d, str)]
    extras = project.get("optional-dependencies", {})
    for extra, reqs in (extras.items() if isinstance(extras, dict) else ()):
        for r in reqs if isinstance(reqs, list) else ():
            if isinstance(r, str):
                dist.append(f'{r}; extra == "{extra}"' if ";" not in r else f'{r} and extra == "{extra}"')
    rp = project.get("requires-python")
    return {"requires_python": rp if isinstance(rp, str) else None, "requires_dist": dist}


# ------------------------------------------------------------------------------------------------- requirements
_EXTRA = re.compile(r'\s*(?:\band\s+)?extra\s*==\s*"([^"]+)"(?:\s+and\b)?\s*')


def _extra_of(marker: Marker | None) -> tuple[str | None, str]:
    """(the extra a marker requires, the rest of the marker as text): ``sys_platform != "darwin" and extra ==
    "dev"`` gives ("dev", 'sys_platform != "darwin"')."""
    if marker is None:
        return None, ""
    text = str(marker)
    extras = _EXTRA.findall(text)
    if len(extras) != 1:
        return None, text
    return extras[0], _EXTRA.sub(" ", text).strip()


def parse_requirements(lines) -> tuple[dict, list[str]]:
    """{(extra or None, canonical name): (Requirement, marker rest)}, and the lines that did not parse."""
    out, bad = {}, []
    for line in lines or ():
        try:
            req = Requirement(line)
        except InvalidRequirement:
            bad.append(line)
            continue
        extra, rest = _extra_of(req.marker)
        out[(extra, canonicalize_name(req.name))] = (req, rest)
    return out, bad


def _probes(*specs: SpecifierSet) -> list[Version]:
    """Versions at and around every bound named in ``specs``: where two specifier sets can disagree."""
    out = set()
    for spec in specs:
        for s in spec:
            try:
                v = Version(s.version.replace(".*", ""))
            except InvalidVersion:
                continue
            rel = list(v.release) + [0] * (3 - len(v.release))
            out.add(v)
            for i in range(len(rel)):
                for step in (-1, 1):
                    bumped = rel[:i] + [rel[i] + step] + [0] * (len(rel) - i - 1)
                    if bumped[i] >= 0:
                        out.add(Version(".".join(map(str, bumped))))
    return sorted(out)


def excluded(old: SpecifierSet, new: SpecifierSet) -> list[str]:
    """Versions the old specifier allowed and the new one does not (probed at the bounds)."""
    return [str(v) for v in _probes(old, new) if old.contains(v, prereleases=True)
            and not new.contains(v, prereleases=True)]


def _spec(text: str | None) -> SpecifierSet | None:
    try:
        return SpecifierSet(text or "")
    except InvalidSpecifier:
        return None


def python_change(old: str | None, new: str | None) -> Change | None:
    if (old or "") == (new or ""):
        return None
    o, n = _spec(old), _spec(new)
    if o is None or n is None:
        return Change(DECISION, "requires-python", "Requires-Python", old, new, "cannot read one of the bounds",
                      PACKAGE)
    lost = [py for py in PYTHONS if o.contains(f"{py}.0") and not n.contains(f"{py}.0")]
    if lost:
        return Change(BREAKING, "requires-python", "Requires-Python", old or "(any)", new or "(any)",
                      f"users on Python {', '.join(lost)} can no longer install it (pip refuses; the matrix "
                      "installs such pins with --ignore-requires-python, recorded in matrix.yaml)", PACKAGE,
                      [f"excluded now: Python {', '.join(lost)}"])
    return Change(INFO, "requires-python", "Requires-Python", old or "(any)", new or "(any)",
                  "no Python that could install it before is excluded", PACKAGE)


def _where(extra: str | None, rest: str) -> str:
    parts = ([f"extra [{extra}]"] if extra else ["base dependency"]) + ([f"when {rest}"] if rest else [])
    return ", ".join(parts)


def dependency_changes(old_lines, new_lines) -> list[Change]:
    old, old_bad = parse_requirements(old_lines)
    new, new_bad = parse_requirements(new_lines)
    out = []
    for key in sorted(set(old) | set(new), key=lambda k: (k[0] or "", k[1])):
        extra, name = key
        was, now = old.get(key), new.get(key)
        base = extra is None
        if was is None:
            out.append(Change(DECISION if base else INFO, "dependency added", name, None, str(now[0]),
                              ("every install now pulls it" if base else
                               f"pip install megatron-core[{extra}] now pulls it"), PACKAGE, [_where(extra, now[1])]))
        elif now is None:
            out.append(Change(INFO, "dependency removed", name, str(was[0]), None,
                              ("no longer installed with it: code that imports it must declare it" if base else
                               f"megatron-core[{extra}] no longer pulls it"), PACKAGE, [_where(extra, was[1])]))
        elif str(was[0].specifier) != str(now[0].specifier) or was[1] != now[1] \
                or was[0].extras != now[0].extras:
            lost = excluded(was[0].specifier, now[0].specifier)
            level = (BREAKING if base else DECISION) if lost else INFO
            shim = (f"installs that had {name} {', '.join(lost[:4])} can no longer resolve it" if lost else
                    "every version allowed before is still allowed")
            out.append(Change(level, "dependency bound", name, str(was[0]), str(now[0]), shim, PACKAGE,
                              [_where(extra, now[1])]))
    for line in sorted(set(new_bad) - set(old_bad)):
        out.append(Change(DECISION, "dependency unreadable", line, None, line, "not a PEP 508 requirement", PACKAGE))
    return out


def metadata_changes(old: dict | None, new: dict | None) -> tuple[list[Change], str | None]:
    """The changes, and why none could be computed (None when they were)."""
    if new is None:
        return [], "the candidate has no METADATA, PKG-INFO or pyproject.toml [project] table"
    if old is None:
        return [], "compat/tooling/data/metadata.json has no entry for the compared release (run tools/metadata.py)"
    changes = [c for c in (python_change(old.get("requires_python"), new.get("requires_python")),) if c]
    return changes + dependency_changes(old.get("requires_dist"), new.get("requires_dist")), None
