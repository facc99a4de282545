"""The other direction: megatron calls a project's override (a subclass's ``forward``, ``__init__``, a hook).

An override breaks when the candidate's base method gained a parameter the override cannot take (Megatron's own
callers, written for the new base, pass it), or dropped one the override still requires (they no longer pass it).
"New" and "dropped" are relative to the release the project runs on now: ``--against``, else the newest cached
release before the candidate. Without one, only a required base parameter the override cannot take is reported.
An override that takes ``**kwargs`` accepts any keyword; one with only ``*args`` may get it positionally, so the
finding is guarded.
"""
from __future__ import annotations

from ... import version as _v
from ...errors import VersionError
from .check import OVERRIDE, Finding
from .lookup import Surface
from .model import parse_signature


def _method_sig(surface: Surface, name: str, alternatives: tuple) -> dict | None:
    """The base method's parameters without ``self``; None when the base has no such method (a new one)."""
    for candidate in (name,) + tuple(alternatives):
        owner, _, method = candidate.rpartition(".")
        if method == "__init__":  # dunders resolve opaque; the class's constructor signature is known
            res = surface.resolve(owner)
            classes = [t for t in res.targets if t.kind == "class"] if res.ok else []
            sig = surface.class_signature(classes[0].name) if classes else None
            if sig is not None:
                return sig
            continue
        res = surface.resolve(candidate)
        functions = [t for t in res.targets if t.kind == "function" and t.how in ("m", "f")] if res.ok else []
        if functions:
            sig = parse_signature(functions[0].sig)
            return {**sig, "p": sig["p"][1:] if sig["p"] and sig["p"][0][1] in (0, 1) else sig["p"]}
    return None


def _takes(sig: dict, name: str) -> bool:
    return bool(sig["kw"]) or any(p[0] == name and p[1] in (1, 2) for p in sig["p"])


def check_overrides(scan, surface: Surface, previous: Surface | None) -> list[Finding]:
    findings = []
    for use in scan.uses:
        if use.how != "override":
            continue
        base = _method_sig(surface, use.name, use.alternatives)
        if base is None or base["kw"] or base["va"]:
            continue  # not an override, or a base that forwards anything (its callers' keywords are unknown)
        mine = parse_signature(use.sig)
        mine = {**mine, "p": mine["p"][1:]}
        old = _method_sig(previous, use.name, use.alternatives) if previous is not None else None
        old_names = {p[0] for p in old["p"]} if old else None
        guard = "the override takes *args (line %d)" % use.line if mine["va"] else None
        for name, kind, has_default in base["p"]:
            if kind == 0 or _takes(mine, name):
                continue
            new = old_names is not None and name not in old_names
            if new or (old_names is None and not has_default):
                findings.append(Finding(use.path, use.line, f"{use.name}({name}=)", OVERRIDE, guard is not None,
                                        guard, f"the candidate's {use.name.rsplit('.', 1)[-1]} takes {name}"
                                        f"{'' if has_default else ' (required)'}; this override cannot receive it",
                                        use="override"))
        base_names = {p[0] for p in base["p"]}
        for name, _kind, has_default in mine["p"]:
            if not has_default and old_names is not None and name in old_names and name not in base_names:
                findings.append(Finding(use.path, use.line, f"{use.name}({name}=)", OVERRIDE, guard is not None,
                                        guard, f"the candidate's base no longer has {name}, which this override "
                                        "requires: its callers do not pass it", use="override"))
    return findings


def previous_release(releases: dict, version: str | None) -> Surface | None:
    """The newest cached release older than ``version`` (what the project most likely runs on now)."""
    if not version:
        return None
    try:
        older = sorted((v for v in releases if _v.is_newer(version, v)), key=_v.parse)
    except VersionError:  # a label that is not a version: no baseline rather than a wrong one
        return None
    return releases[older[-1]] if older else None
