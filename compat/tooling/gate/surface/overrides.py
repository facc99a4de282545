# SPDX-License-Identifier: Apache-2.0
"""The class contract between megatron and a project's subclasses.

Overrides: megatron calls a project's override (a subclass's ``forward``, ``__init__``, a hook).

An override breaks when the candidate's base method gained a parameter the override cannot take (Megatron's own
callers, written for the new base, pass it), or dropped one the override still requires (they no longer pass it).
"New" and "dropped" are relative to the release the project runs on now: ``--against``, else the newest cached
release before the candidate. Without one, only a required base parameter the override cannot take is reported.
An override that takes ``**kwargs`` accepts any keyword; one with only ``*args`` may get it positionally, so the
finding is guarded.
"""
from __future__ import annotations

from .... import version as _v
from ....errors import VersionError
from .check import MISSING_MEMBER, OVERRIDE, Finding, _guard_of
from .project import SELF_ATTRIBUTE
from .lookup import Surface
from .model import ATTRS, HAS_GETATTR, PARAMS, VARARGS, VARKW, parse_signature


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
            return {**sig, PARAMS: sig[PARAMS][1:] if sig[PARAMS] and sig[PARAMS][0][1] in (0, 1) else sig[PARAMS]}
    return None


def _takes(sig: dict, name: str) -> bool:
    return bool(sig[VARKW]) or any(p[0] == name and p[1] in (1, 2) for p in sig[PARAMS])


def check_overrides(scan, surface: Surface, previous: Surface | None) -> list[Finding]:
    findings = []
    for use in scan.uses:
        if use.how != "override":
            continue
        base = _method_sig(surface, use.name, use.alternatives)
        if base is None or base[VARKW] or base[VARARGS]:
            continue  # not an override, or a base that forwards anything (its callers' keywords are unknown)
        mine = parse_signature(use.sig)
        mine = {**mine, PARAMS: mine[PARAMS][1:]}
        old = _method_sig(previous, use.name, use.alternatives) if previous is not None else None
        old_names = {p[0] for p in old[PARAMS]} if old else None
        guard = "the override takes *args (line %d)" % use.line if mine[VARARGS] else None
        for name, kind, has_default in base[PARAMS]:
            if kind == 0 or _takes(mine, name):
                continue
            new = old_names is not None and name not in old_names
            if new or (old_names is None and not has_default):
                findings.append(Finding(use.path, use.line, f"{use.name}({name}=)", OVERRIDE, guard is not None,
                                        guard, f"the candidate's {use.name.rsplit('.', 1)[-1]} takes {name}"
                                        f"{'' if has_default else ' (required)'}; this override cannot receive it",
                                        use="override"))
        base_names = {p[0] for p in base[PARAMS]}
        for name, _kind, has_default in mine[PARAMS]:
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


def _sets_on_self(surface: Surface, name: str) -> bool | None:
    """Does the class ``name`` (dotted ``Class.attr``) or a megatron class in its MRO bind ``attr``? None: unknown."""
    owner, _, attr = name.rpartition(".")
    res = surface.resolve(owner)
    classes = [t for t in res.targets if t.kind == "class"] if res.ok else []
    if not classes:
        return None
    for cls in classes:
        for t in surface.mro(cls.name):
            entry = surface.classes.get(t.name) if t.kind == "class" else None
            if entry is not None and (attr in entry[ATTRS] or entry.get(HAS_GETATTR)):
                return True
    return False


def check_inherited(scan, surface: Surface, releases: dict) -> list[Finding]:
    """``self.X`` in a subclass, where X is what a megatron base used to set on ``self`` (in some cached release)
    and the candidate's base no longer does (``self.model_comm_pgs`` once the base sets ``self.pg_collection``).
    An attribute no release of the base ever set is not claimed: something else may set it."""
    findings: dict = {}
    known: dict = {}  # name -> the releases whose base sets it, or None where the candidate's does (each once)
    for use in scan.uses:
        if use.via != SELF_ATTRIBUTE:
            continue
        if use.name not in known:
            missing = _sets_on_self(surface, use.name) is False
            known[use.name] = [v for v, other in releases.items() if _sets_on_self(other, use.name)] if missing else None
        had = known[use.name]
        if not had:
            continue
        key = (use.path, use.name)
        if key in findings:
            if use.line != findings[key].line and use.line not in findings[key].also_at:
                findings[key].also_at.append(use.line)
            continue
        attr = use.name.rsplit(".", 1)[1]
        guard = _guard_of(use, MISSING_MEMBER, use.name, attr, surface)
        findings[key] = Finding(use.path, use.line, use.name, MISSING_MEMBER, guard is not None, guard,
                                f"the base sets self.{attr} in {', '.join(had)}, not in this candidate",
                                use="attribute")
    return list(findings.values())
