# SPDX-License-Identifier: Apache-2.0
"""The class contract between megatron and a project's subclasses.

Overrides: megatron calls a project's override (a subclass's ``forward``, ``__init__``, a hook).

An override breaks when the candidate's base method gained a parameter the override cannot take (Megatron's own
callers, written for the new base, pass it), or dropped one the override still requires (they no longer pass it).
"New" and "dropped" are relative to the release the project runs on now: ``--against``, else the newest cached
release before the candidate. Without one, only a required base parameter the override cannot take is reported.
An override that takes ``**kwargs`` accepts any keyword; one with only ``*args`` may get it positionally, so the
finding is guarded.

How the candidate's own code calls the method is the other half: ``self.method(...)`` in the base class and the
megatron classes above it (the model's ``sc``), and, for a function the project hands to megatron (a model
provider passed to ``get_model``/``pretrain``), how the megatron function calls that parameter, followed through
the functions it is handed on to (the model's ``pc``). A keyword the project's function cannot take, more
positional arguments than it has, or a required parameter the call leaves out is a finding; guarded when the
project's function takes ``*args``/``**kwargs``.
"""
from __future__ import annotations

from dataclasses import replace

from .... import version as _v
from ....errors import VersionError
from . import guards as g
from .check import MISSING_MEMBER, OVERRIDE, Finding, _guard_of
from .conditions import NOT, always, beyond, decode_shape, describe
from .lookup import Surface
from .model import (
    ATTRS,
    CALLED,
    HANDED_ON,
    HAS_GETATTR,
    PARAM_CALLS,
    PARAMS,
    SELF_CALLS,
    SPEC_BUILT,
    VARARGS,
    VARKW,
    parse_signature,
)
from .project import SELF_ATTRIBUTE


def _method_sig(surface: Surface, name: str, alternatives: tuple, kinds: tuple = ("m", "f")) -> dict | None:
    """The base method's parameters without ``self``; None when the base has no such method (a new one).
    ``kinds``: the functions that count (a subclass's static method is not what megatron calls; a replacement
    of one is: megatron's ``Function.apply`` runs whatever its ``forward`` is)."""
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
        functions = [t for t in res.targets if t.kind == "function" and t.how in kinds] if res.ok else []
        if functions:
            return _without_first_positional(parse_signature(functions[0].sig))
    return None


def _without_first_positional(sig: dict) -> dict:
    """``sig`` without its first parameter when that is positional (``self``, ``ctx``)."""
    return {**sig, PARAMS: sig[PARAMS][1:]} if sig[PARAMS] and sig[PARAMS][0][1] in (0, 1) else sig


def _takes(sig: dict, name: str) -> bool:
    return bool(sig[VARKW]) or any(p[0] == name and p[1] in (1, 2) for p in sig[PARAMS])


def check_overrides(scan, surface: Surface, previous: Surface | None) -> list[Finding]:
    """Overrides and replacements (a project function put in a megatron callable's place) against the candidate's
    signature of what they stand in for."""
    findings = []
    for use in scan.uses:
        if use.how == "override":
            mine = parse_signature(use.sig)
            findings += _signature_findings(use, {**mine, PARAMS: mine[PARAMS][1:]}, surface, previous,
                                            (use.path, use.line), "this override", None)
        elif use.how == "replacement":
            for _slot, function, sig, where in use.callables:
                if not sig:
                    continue
                path, line = where or (use.path, use.line)
                site = f" at {use.path}:{use.line}" if (path, line) != (use.path, use.line) else ""
                mine = _without_first_positional(parse_signature(sig))  # as the base's is dropped
                findings += _signature_findings(use, mine, surface, previous, (path, line),
                                                f"{function}, which replaces it{site},", _branch_guard(use, surface))
    return findings


def _signature_findings(use, mine: dict, surface: Surface, previous: Surface | None, where: tuple, what: str,
                        branch: str | None) -> list[Finding]:
    """``mine`` (a signature, its first positional parameter dropped as the base's is) against the candidate's
    ``use.name``: a new base parameter it cannot take, a parameter it requires that the base dropped."""
    kinds = ("m", "f", "s") if use.how == "replacement" else ("m", "f")
    base = _method_sig(surface, use.name, use.alternatives, kinds)
    if base is None or base[VARKW] or base[VARARGS]:
        return []  # not an override, or a base that forwards anything (its callers' keywords are unknown)
    old = _method_sig(previous, use.name, use.alternatives, kinds) if previous is not None else None
    old_names = {p[0] for p in old[PARAMS]} if old else None
    path, line = where
    how = "replacement" if use.how == "replacement" else "override"
    guard = (f"it takes *args (line {line})" if how == "replacement" else f"the override takes *args (line {line})") \
        if mine[VARARGS] else branch
    owner = f"the candidate's {use.name.rsplit('.', 1)[-1]}" if how == "replacement" else "the candidate's base"
    findings = []
    for name, kind, has_default in base[PARAMS]:
        if kind == 0 or _takes(mine, name):
            continue
        new = old_names is not None and name not in old_names
        if new or (old_names is None and not has_default):
            findings.append(Finding(path, line, f"{use.name}({name}=)", OVERRIDE, guard is not None, guard,
                                    f"the candidate's {use.name.rsplit('.', 1)[-1]} takes {name}"
                                    f"{'' if has_default else ' (required)'}; {what} cannot receive it", use=how, rule=use.rule))
    base_names = {p[0] for p in base[PARAMS]}
    for name, _kind, has_default in mine[PARAMS]:
        if not has_default and old_names is not None and name in old_names and name not in base_names:
            findings.append(Finding(path, line, f"{use.name}({name}=)", OVERRIDE, guard is not None, guard,
                                    f"{owner} no longer has {name}, which {what} requires: its callers do not "
                                    "pass it", use=how, rule=use.rule))
    return findings


_FORWARD_DEPTH = 6  # functions a callable is handed on through (pretrain -> setup_model_and_optimizer -> get_model)


def misfits(shape: str, sig: dict) -> list[tuple[str, str, list]]:
    """(label, why, when) for each way a call of ``shape`` (model.py) does not fit ``sig`` (``self`` already
    dropped); when: the alternatives under which the candidate calls it that way (conditions.py; ``[()]``: always)."""
    count, keywords, when = decode_shape(shape)
    call = when[""]
    positional = [p for p in sig[PARAMS] if p[1] in (0, 1)]
    out = []
    if count > len(positional) and not sig[VARARGS]:
        out.append(("…", f"is called with {count} positional arguments; it takes {len(positional)}", call))
    out += [(f"{k}=", f"is called with {k}=, which it cannot take", when[k]) for k in keywords if not _takes(sig, k)]
    given = {p[0] for p in positional[:count]}
    for name, _kind, has_default in sig[PARAMS]:
        passed = [beyond(path, call[0]) for path in when[name]] if name in keywords else None
        if has_default or name in given or (passed is not None and always(passed)):
            continue
        left_out = call if passed is None else [call[0] + (NOT + describe(passed),)]
        out.append((f"{name}=", f"requires {name}, which the call does not pass", left_out))
    return out


def merged(found) -> dict[str, tuple[str, list]]:
    """label -> (why, when) over the misfits of several calls: one label's alternatives joined (a keyword one
    call passes in the ``if`` branch and another in the ``else`` branch is always passed)."""
    out: dict[str, tuple[str, list]] = {}
    for label, why, when in found:
        out[label] = (why, when) if label not in out else (out[label][0], out[label][1] + when)
    return out


def conditional(when: list) -> str | None:
    """The guard text of a misfit the candidate makes only under a condition; None when it always makes it."""
    return None if always(when) else f"conditional: the candidate calls it so only when {describe(when)}"


def _self_call_shapes(surface: Surface, name: str, alternatives: tuple, replaced: tuple) -> list[str]:
    """How the candidate's base class (and the megatron classes above it) call ``self.method``: the calls in
    methods that still run for the project's class, i.e. that neither it (``replaced``) nor a class before the
    caller's in the MRO defines again."""
    shapes: list[str] = []
    for candidate in (name,) + tuple(alternatives):
        owner, _, method = candidate.rpartition(".")
        res = surface.resolve(owner)
        for cls in (t for t in res.targets if t.kind == "class") if res.ok else ():
            defined = set(replaced)
            for t in surface.mro(cls.name):
                entry = surface.classes.get(t.name) if t.kind == "class" else None
                for call in (entry or {}).get(SELF_CALLS, {}).get(method, []):
                    caller, _, shape = call.partition("@")
                    if caller not in defined and shape not in shapes:
                        shapes.append(shape)
                defined.update((entry or {}).get(ATTRS, {}))
    return shapes


def _call_site_findings(use, mine: dict, shapes: list[str], what: str, seen: set, where=None) -> list[Finding]:
    """``where``: (path, line) to report at instead of the use (a provider defined in another file)."""
    path, line = where or (use.path, use.line)
    guarded = bool(mine[VARARGS] or mine[VARKW])
    guard = f"it takes *args/**kwargs (line {line})" if guarded else None
    findings = []
    for label, (why, when) in merged(x for shape in shapes for x in misfits(shape, mine)).items():
        name = f"{use.name}({label})"
        if name not in seen:
            seen.add(name)
            reason = guard or conditional(when)
            findings.append(Finding(path, line, name, OVERRIDE, reason is not None, reason, f"{what} {why}",
                                    use="override", rule=use.rule))
    return findings


def check_call_sites(scan, surface: Surface, reported: list[Finding]) -> list[Finding]:
    """Overrides against how the candidate's base calls ``self.method``; functions the project passes to a
    megatron function against how that function calls them."""
    seen = {(f.path, f.line, f.name) for f in reported}
    findings = []
    for use in scan.uses:
        if use.how == "override":
            mine = parse_signature(use.sig)
            mine = {**mine, PARAMS: mine[PARAMS][1:]}
            done = {n for p, line, n in seen if (p, line) == (use.path, use.line)}
            method = use.name.rsplit(".", 1)[-1]
            shapes = _self_call_shapes(surface, use.name, use.alternatives, use.siblings)
            findings += _call_site_findings(use, mine, shapes,
                                            f"the candidate's base calls self.{method}; this override", done)
        elif use.how == "call" and use.callables:
            for slot, function, sig, where in use.callables:
                shapes = provider_call_shapes(surface, use.name, slot)
                done: set = set()
                elsewhere = where if where and where[0] != use.path else None
                what = f"{function}, passed to {use.name.rsplit('.', 1)[-1]}" + (
                    f" at {use.path}:{use.line}," if elsewhere else ",")
                found = _call_site_findings(use, parse_signature(sig), shapes, what, done, elsewhere)
                findings += [Finding(f.path, f.line, f"{f.name}->{function}", f.kind, f.guarded, f.guard, f.instead,
                                     use="callback", rule=use.rule) for f in found]
        elif use.how == "spec":
            findings += _spec_findings(use, scan, surface)
    return _one_per_def(findings, reported)


def _one_per_def(findings: list[Finding], reported: list[Finding]) -> list[Finding]:
    """Spec findings sit at the def they misfit: several specs of one class give one finding there, unguarded
    when any of them is; none where an override finding already says the same of that def (a megatron subclass
    in a spec)."""
    said = {(f.path, f.line, f.name[f.name.rfind("("):]) for f in (*reported, *findings) if f.use != "spec"}
    out: list[Finding] = []
    at: dict = {}
    for f in findings:
        key = (f.path, f.line, f.name)
        if f.use == "spec" and (f.path, f.line, f.name[f.name.rfind("("):]) in said:
            continue
        if f.use != "spec" or key not in at:
            at.setdefault(key, len(out))
            out.append(f)
        elif out[at[key]].guarded and not f.guarded:
            out[at[key]] = f
    return out


def spec_shapes(surface: Surface, name: str, alternatives: tuple, key: str) -> tuple[list, list]:
    """(how the megatron class ``name`` builds its submodule ``key`` with ``build_module``: the arguments after
    the spec, how it then calls it: ``self.x(...)``), over the classes of its MRO."""
    built, called = [], []
    for candidate in (name,) + tuple(alternatives):
        res = surface.resolve(candidate)
        mro = [t for cls in res.targets if cls.kind == "class" for t in surface.mro(cls.name)] if res.ok else []
        entries = [surface.classes.get(t.name) or {} for t in mro if t.kind == "class"]
        for entry in entries:
            attr, shapes = (entry.get(SPEC_BUILT) or {}).get(key, (None, []))
            built += [x for x in shapes if x not in built]
            for other in entries if attr else ():
                called += [x.partition("@")[2] for x in other.get(SELF_CALLS, {}).get(attr, [])
                           if x.partition("@")[2] not in called]
    return built, called


def _builders(surface: Surface, key: str) -> list[str]:
    """Every class of the candidate that builds a submodule ``key`` from its spec."""
    memo = ("builders", key)
    if memo not in surface._memo:
        # only a class whose source spells build_module has a SPEC_BUILT entry: a lazy model reads just those
        spelling = getattr(surface.classes, "spelling", None)
        pairs = spelling("build_module") if spelling else surface.classes.items()
        surface._memo[memo] = sorted(q for q, entry in pairs if key in entry.get(SPEC_BUILT, {}))
    return surface._memo[memo]


def _spec_findings(use, scan, surface: Surface) -> list[Finding]:
    """A project class in a megatron class's spec: its ``__init__`` against the ``build_module`` call (plus the
    keywords the spec adds), its ``forward`` against how the megatron class calls the built module. For a spec of
    unknown origin (``use.name`` ""), only what every class of the candidate that builds ``key`` does."""
    key, origin, added = use.spec
    owners = [(use.name, use.alternatives)] if use.name else [(q, ()) for q in _builders(surface, key)]
    shapes = [spec_shapes(surface, name, alternatives, key) for name, alternatives in owners]
    owner = f"the candidate's {use.name.rsplit('.', 1)[-1]}" if use.name else f"every class of the candidate that " \
        f"builds a {key}"
    findings = []
    for method, index, verb in (("forward", 1, "calls"), ("__init__", 0, "builds")):
        sig = scan.method(origin, method)
        if sig is None or (index == 0 and added is None):
            continue
        # at the def whose signature must change, as an override's finding; the spec line is named in the text
        path, line = scan.method_def(origin, method) or (use.path, use.line)
        site = f" at {use.path}:{use.line}" if (path, line) != (use.path, use.line) else ""
        mine = parse_signature(sig)
        mine = {**mine, PARAMS: mine[PARAMS][1:]}
        per_owner = [merged(x for shape in built_called[index]
                            for x in misfits(_with_keywords(shape, added) if index == 0 else shape, mine))
                     for built_called in shapes]
        guard = f"it takes *args/**kwargs (line {line})" if mine[VARARGS] or mine[VARKW] else \
            _branch_guard(use, surface)
        for label, (why, _when) in (per_owner[0] if per_owner else {}).items():
            if not all(label in other for other in per_owner[1:]):
                continue
            # several owners: the misfit is certain only as far as the least certain of them
            reason = guard or next(filter(None, (conditional(other[label][1]) for other in per_owner)), None)
            findings.append(Finding(path, line, f"{origin}.{method}({label})", OVERRIDE, reason is not None,
                                    reason, f"{owner} {verb} its {key} from {'the' if site else 'this'} spec{site}; "
                                    f"{origin.rsplit('.', 1)[-1]}.{method} {why}", use="spec", rule=use.rule))
    return findings


def _branch_guard(use, surface: Surface) -> str | None:
    """A version check, flag or probe around the spec (or replacement) line: a branch not taken on the candidate
    builds or installs nothing; a ``try`` around it is no guard: megatron builds and calls the module later,
    elsewhere."""
    branches = tuple(x for x in use.guards if x[0] != g.TRY)
    wanted = use.spec[0] if use.spec else use.name
    return _guard_of(replace(use, guards=branches), OVERRIDE, use.name, wanted, surface) if branches else None


def _with_keywords(shape: str, added: tuple) -> str:
    """The shape with the spec's keywords added (always passed: build_module adds them to every call)."""
    head, tab, conditions = shape.partition("\t")
    count, _, keywords = head.partition("|")
    given = [k for k in keywords.split(",") if k]
    return f"{count}|{','.join(given + [k for k in added if k not in given])}{tab}{conditions}"


def provider_call_shapes(surface: Surface, name: str, slot: str) -> list[str]:
    """How the candidate function ``name`` (and the functions it hands the argument on to) calls what is passed
    in ``slot`` ("0" positional, "=kw" keyword)."""
    shapes: list[str] = []
    todo, visited = [(name, slot, 0)], set()
    while todo:
        current, where, depth = todo.pop()
        if (current, where) in visited or depth > _FORWARD_DEPTH:
            continue
        visited.add((current, where))
        res = surface.resolve(current)
        for target in (t for t in res.targets if t.kind == "function" and t.how == "f") if res.ok else ():
            module, _, function = target.name.rpartition(".")
            params = parse_signature(target.sig)[PARAMS]
            param = where[1:] if where.startswith("=") else (
                params[int(where)][0] if int(where) < len(params) and params[int(where)][1] in (0, 1) else None)
            calls = (surface.modules.get(module) or {}).get(PARAM_CALLS, {}).get(function, {}).get(param) if param else None
            if not calls:
                continue
            shapes += [x for x in calls[CALLED] if x not in shapes]
            for forward in calls[HANDED_ON]:
                callee, _, next_slot = forward.rpartition(" ")
                todo.append((f"{module}.{callee}", next_slot, depth + 1))
    return shapes


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
                                use="attribute", rule=use.rule)
    return list(findings.values())
