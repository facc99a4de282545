# SPDX-License-Identifier: Apache-2.0
"""Resolve a project's uses of megatron against a candidate model and turn the failures into findings."""
from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field, replace

from .... import version as _v
from ....errors import VersionError
from . import guards as g
from .annotated import ANNOTATED_READ, ProjectNames, lacks_everywhere
from .forwarding import PROJECT_CALL
from .instances import ANNOTATED, INSTANCE, PROJECT_CLASS
from .kinds import FindingKind
from .lookup import OPAQUE, Surface, Target
from .model import PARAMS, VARARGS, VARKW
from .project import SELF_ATTRIBUTE, SUPER_AFTER

MISSING_MODULE = FindingKind.MISSING_MODULE
MISSING_NAME = FindingKind.MISSING_NAME
MISSING_MEMBER = FindingKind.MISSING_MEMBER
UNEXPECTED_KEYWORD = FindingKind.UNEXPECTED_KEYWORD
MISSING_REQUIRED = FindingKind.MISSING_REQUIRED
TOO_MANY_POSITIONAL = FindingKind.TOO_MANY_POSITIONAL
OVERRIDE = FindingKind.OVERRIDE
GIVEN_TWICE = FindingKind.GIVEN_TWICE
DEPRECATED = FindingKind.DEPRECATED
NOT_SHIPPED = FindingKind.NOT_SHIPPED
BREAKING = (MISSING_MODULE, MISSING_NAME, MISSING_MEMBER, UNEXPECTED_KEYWORD, MISSING_REQUIRED, TOO_MANY_POSITIONAL,
            GIVEN_TWICE, OVERRIDE)
_RAISES = {MISSING_MODULE: "import", MISSING_NAME: "import", MISSING_MEMBER: "attribute",
           UNEXPECTED_KEYWORD: "call", MISSING_REQUIRED: "call", TOO_MANY_POSITIONAL: "call", GIVEN_TWICE: "call"}


@dataclass
class Failure:
    kind: str
    name: str  # the dotted name that fails (for keywords: ``callable(keyword=)``)
    subject: str = ""  # the name looked up (module/class/callable) for close matches
    wanted: str = ""  # the missing part or keyword
    detail: str = ""
    line: int | None = None  # where the failing part is, when not the use's first line (a keyword)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    name: str
    kind: str
    guarded: bool
    guard: str | None = None
    instead: str = ""
    close: list = field(default_factory=list)
    history: dict = field(default_factory=dict)
    use: str = ""  # how the project touches it: module, import, attribute, call, probe
    also_at: list = field(default_factory=list)  # further lines in the same file failing the same way
    on_against: bool | None = None  # fails the same way on the --against release (None: no --against)
    rule: str = ""  # the detector whose use this is (detectors.rules(): the catalogue in docs/surface-gate.md)
    # what it was made from: (the project Use (for history), the Failure, the guard tuple behind ``guard``)
    _source: tuple = field(default=(None, None, None), repr=False, compare=False)

    @property
    def _use(self):
        return self._source[0]

    @property
    def _failure(self) -> Failure | None:
        return self._source[1]

    @property
    def _guard(self) -> tuple | None:
        return self._source[2]

    @property
    def breaks(self) -> bool:
        return self.kind in BREAKING and not self.guarded

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if not k.startswith("_")}


class _Params:
    """One signature, indexed by parameter name once, so that a call is checked in time linear in its keywords."""

    def __init__(self, sig: dict):
        self.sig = sig
        self.by_name = {}
        for index, (name, kind, _default) in enumerate(sig[PARAMS]):
            self.by_name.setdefault(name, (index, kind))

    def accepts(self, keyword: str) -> bool:
        return bool(self.sig[VARKW]) or self.by_name.get(keyword, (0, 0))[1] in (1, 2)

    def positional_index(self, keyword: str) -> int | None:
        index, kind = self.by_name.get(keyword, (None, None))
        return index if kind == 1 else None

    def positional_capacity(self) -> int | None:
        return None if self.sig[VARARGS] else sum(1 for p in self.sig[PARAMS] if p[1] in (0, 1))

    def missing_required(self, positional: int, keywords: set) -> list:
        missing = []
        for index, (name, kind, has_default) in enumerate(self.sig[PARAMS]):
            if has_default:
                continue
            if kind in (0, 1) and index < positional:
                continue
            if kind != 0 and name in keywords:
                continue
            missing.append(name)
        return missing


def evaluate(use, surface: Surface) -> tuple[list, list]:
    """(failures, deprecation notes) of one use against one candidate; no failures means it resolves."""
    best = None
    for name in (use.name,) + tuple(use.alternatives):
        failures, notes = _evaluate_name(use, name, surface)
        if not failures:
            return [], notes
        best = best or (failures, notes)
    return best


def _evaluate_name(use, name: str, surface: Surface) -> tuple[list, list]:
    held = use.via in (INSTANCE, ANNOTATED, ANNOTATED_READ)
    if held and not _only_classes(surface, name.rpartition(".")[0]):
        return [], []  # not constructed from a class here (a factory, or not shipped: the import says so)
    parts = name.split(".")
    if len(parts) > 1 and f"megatron.{parts[1]}" not in surface.modules:
        return [Failure(NOT_SHIPPED, f"megatron.{parts[1]}")], []
    res = surface.resolve(name)
    notes = list(res.notes)
    if use.how == "module":
        note = surface.module_deprecation(name)
        if note:
            notes.append(note)
    if not res.ok:
        return _unresolved(use, name, res, surface), notes
    if use.how != "call":
        return [], notes
    targets = [_after_in_mro(t, surface) for t in res.targets] if use.via == SUPER_AFTER else res.targets
    raw = [_bound_signature(surface, t) if held else surface.call_signature(t) for t in targets]
    if not raw or any(s is None for s in raw):
        return [], notes
    return _call_failures(use, name, [_params(surface, s) for s in raw]), notes


def _unresolved(use, name: str, res, surface: Surface) -> list:
    """The failure of a name the candidate does not resolve (none where a held instance's subclass may have it)."""
    if use.via == ANNOTATED:
        return []  # a subclass the parameter may hold can have it
    if use.via == ANNOTATED_READ and not (
            res.container is not None and res.container.kind == "class" and name == f"{res.resolved}.{res.missing}"
            and lacks_everywhere(surface, res.container.name, res.missing)):
        return []  # a subclass in the candidate has it (or the class itself is not there)
    failing = f"{res.resolved}.{res.missing}" if res.resolved else res.missing
    if res.container is not None and res.container.kind == "class":
        kind = MISSING_MEMBER
    elif use.how == "module" or (use.how == "import" and failing != name):
        kind = MISSING_MODULE
    else:
        kind = MISSING_NAME
    return [Failure(kind, failing, res.resolved, res.missing)]


def _call_failures(use, name: str, sigs: list) -> list:
    """What a call's keywords and positional arguments break in every signature its callee may have."""
    failures = []
    lines = dict(zip(use.keywords, use.keyword_lines))
    for keyword in use.keywords:
        if not any(s.accepts(keyword) for s in sigs):
            failures.append(Failure(UNEXPECTED_KEYWORD, f"{name}({keyword}=)", name, keyword, line=lines.get(keyword)))
    if use.positional is not None:
        for keyword in use.keywords:
            indexes = [s.positional_index(keyword) for s in sigs]
            if all(i is not None and i < use.positional for i in indexes):
                failures.append(Failure(GIVEN_TWICE, f"{name}({keyword}=)", name, keyword,
                                        f"argument {indexes[0] + 1} is also {keyword}", line=lines.get(keyword)))
        capacities = [s.positional_capacity() for s in sigs]
        if all(c is not None and use.positional > c for c in capacities):
            failures.append(Failure(TOO_MANY_POSITIONAL, f"{name}(…)", name, "",
                                    f"{use.positional} given, at most {max(capacities)} accepted"))
        if not use.splat:
            given = set(use.keywords)
            missing = [s.missing_required(use.positional, given) for s in sigs]
            if all(missing):
                for param in missing[0]:
                    failures.append(Failure(MISSING_REQUIRED, f"{name}({param}=)", name, param))
    return failures


def _only_classes(surface: Surface, name: str) -> bool:
    parts = name.split(".")
    if len(parts) > 1 and f"megatron.{parts[1]}" not in surface.modules:
        return False
    res = surface.resolve(name)
    return res.ok and all(t.kind == "class" for t in res.targets)


def _bound_signature(surface: Surface, target: Target) -> dict | None:
    """What ``instance.method(...)`` accepts: a plain method without ``self``; a property's value is unknown."""
    if target.kind == "function" and target.how == "m":
        sig = surface.call_signature(target)
        params = sig[PARAMS]
        if params and params[0][1] in (0, 1):
            return {**sig, PARAMS: params[1:]}
        return sig if sig[VARARGS] else None  # ``def m(*args)``: self is the first of them
    return surface.call_signature(target)


def _after_in_mro(target: Target, surface: Surface) -> Target:
    """``super(Base, self).__init__``: the class after Base in Base's MRO (what Python calls)."""
    if target.kind != "class":
        return OPAQUE
    order = surface.mro(target.name)
    return order[1] if len(order) > 1 and order[1].kind == "class" else OPAQUE


def _params(surface: Surface, sig: dict) -> _Params:
    """The indexed form of a signature the surface returned (signatures are memoised there, so index each once)."""
    key = ("params", id(sig))
    known = surface._memo.get(key)
    if known is None or known.sig is not sig:
        known = surface._memo[key] = _Params(sig)
    return known


def _guard_of(use, kind: str, failing: str, wanted: str, surface: Surface) -> str | None:
    """Why the failure is protected (``try/except ImportError (line 12)``), or None when it would raise."""
    found = protection(use, kind, failing, wanted, surface)
    return found[0] if found else None


def protection(use, kind: str, failing: str, wanted: str, surface: Surface) -> tuple[str, tuple] | None:
    """The guard that protects the failure, as (its text, the guard tuple), or None when it would raise."""
    raised = _RAISES.get(kind)
    if use.how in ("attribute", "call", "probe") and kind in (MISSING_MODULE, MISSING_NAME):
        raised = "attribute"  # a missing name met through an attribute chain raises AttributeError
    names = {wanted, failing.split("(")[0]} | set(failing.split("(")[0].split("."))
    if use.how in ("attribute", "call") and kind in (MISSING_MODULE, MISSING_NAME, MISSING_MEMBER):
        names |= set(use.name.split("."))  # ``if Old is not None: Old()`` protects any failure on Old's way
    for guard in use.guards:
        gkind, line, detail, note = guard
        if gkind in (g.FALLBACK, g.PROBE_ELSE):
            if detail and all(_resolves(surface, name) for name in detail):
                what = "the imports" if gkind == g.FALLBACK else "what the probe asks for"
                verb = "resolve" if gkind == g.FALLBACK else "resolves"
                return f"{gkind} that is not taken: {what} at line {line} {verb}", guard
            continue
        if gkind == g.PROBE_TAKEN and detail and not all(_resolves(surface, name) for name in detail):
            return f"{gkind} that is not taken: the probe at line {line} finds nothing here", guard
        if gkind == g.COMPARED and detail and not all(_can_equal(surface, name) for name in detail):
            return (f"{gkind} that is never true here: {', '.join(sorted(detail))} (line {line}) is missing or no "
                    "member of its enum in the candidate"), guard
        if g.catches(guard, raised, names):
            what = gkind if gkind != g.TRY else f"{gkind} {', '.join(sorted(detail)).replace('*', 'any exception')}"
            return what + (f" (line {line})" if line else "") + (f"; {note}" if note else ""), guard
    return None


def _can_equal(surface: Surface, name: str) -> bool:
    """Can a value equal ``name`` on the candidate? Not when reading it raises (it is missing: that read is its own
    finding), nor when it is a method or property of an enum (no member of the enum is equal to it). A name of a
    package the wheel does not ship (``megatron.model``, a Megatron-LM checkout's) is not known here: it can."""
    parts = name.split(".")
    if len(parts) > 1 and f"megatron.{parts[1]}" not in surface.modules:
        return True
    res = surface.resolve(name) if _resolves(surface, name) else None
    if res is None or not res.ok:
        return False
    owner = surface.resolve(name.rpartition(".")[0])
    enums = [t for t in owner.targets if t.kind == "class" and surface.is_enum(t.name)] if owner.ok else []
    return not (enums and res.targets and all(t.kind == "function" for t in res.targets))


def _resolves(surface: Surface, name: str) -> bool:
    parts = name.split(".")
    if len(parts) > 1 and f"megatron.{parts[1]}" not in surface.modules:
        return False
    return surface.resolve(name).ok


def check(scan, surface: Surface) -> list[Finding]:
    """Every use that fails or is deprecated on ``surface``, de-duplicated, in file and line order."""
    findings: dict[tuple, Finding] = {}
    import_failures: dict[tuple, Finding] = {}  # (path, failing name) -> the import that already says it
    failing_at: dict[tuple, _Names] = {}  # (path, line) -> names with a finding there
    assigned = _Names(scan.sets)
    names = ProjectNames(getattr(scan, "sources", []), scan.classes)
    for use in sorted(scan.uses, key=lambda u: (u.path, u.line, u.how != "module", u.how != "import")):
        if use.how in ("override", "spec", "replacement") or use.via == SELF_ATTRIBUTE:
            continue  # the class contract: overrides.py
        if use.via in (PROJECT_CLASS, PROJECT_CALL):
            continue  # a project class scan_project did not turn into its megatron bases (one file's scan)
        if _assigned_by_project(use.name, assigned):
            continue  # the project assigns this name (or the object it hangs off) itself
        failures, notes = evaluate(use, surface)
        if not failures and use.via == ANNOTATED and use.how == "attribute":
            read = replace(use, via=ANNOTATED_READ)
            more = evaluate(read, surface)[0]
            if more and _project_lacks(more[0], names, surface):
                use, failures = read, more
        for failure in failures:
            found = protection(use, failure.kind, failure.name, failure.wanted, surface)
            guard = found[0] if found else None
            first = import_failures.get((use.path, failure.name))
            through = use.how in ("attribute", "call") and use.name.startswith(failure.name + ".")
            folds = use.how not in ("module", "import") if first is not None and first.use in ("module", "import") \
                else through
            if first is not None and folds and (not first.guarded or guard is not None):
                # uses come in line order: a line already listed is the last one (no scan of the list)
                if use.line != first.line and (not first.also_at or first.also_at[-1] != use.line):
                    first.also_at.append(use.line)
                continue
            line = failure.line or use.line
            key = (use.path, line, failure.name, failure.kind)
            here = failing_at.get((use.path, use.line))
            if key in findings or (here is not None and here.below(failure.name, ".")):
                continue  # a.b is missing on this line: a.b.c is not reported as well
            finding = Finding(use.path, line, failure.name, failure.kind, guard is not None, guard,
                              failure.detail, use=use.how, rule=use.rule,
                              _source=(use, failure, found[1] if found else None))
            findings[key] = finding
            failing_at.setdefault((use.path, line), _Names()).add(failure.name)
            if use.how in ("module", "import") or use.name == failure.name:
                import_failures[(use.path, failure.name)] = finding  # later uses through an alias point here
        if not failures:
            for note in notes:
                key = (use.path, use.line, use.name, DEPRECATED)
                if key not in findings:
                    guard = _guard_of(use, DEPRECATED, use.name, "", surface)
                    findings[key] = Finding(use.path, use.line, use.name, DEPRECATED, guard is not None, guard,
                                            note, use=use.how, rule=use.rule, _source=(use, None, None))
                    failing_at.setdefault((use.path, use.line), _Names()).add(use.name)
    return sorted(findings.values(), key=lambda f: (f.path, f.line, f.name))


def _project_lacks(failure: Failure, names: ProjectNames, surface: Surface) -> bool:
    """The project can give no instance of the failing class the member (annotated.py)."""
    res = surface.resolve(failure.subject)
    classes = [t.name for t in res.targets if t.kind == "class"] if res.ok else []
    return bool(classes) and not names.defines(failure.wanted) and not any(
        names.opened(surface, q) for q in classes)


def _assigned_by_project(name: str, sets: _Names) -> bool:
    """``ckpt_base.async_calls = Queue()`` makes ``ckpt_base.async_calls`` and everything read off it the
    project's own (one rule for monkeypatches and attributes it creates)."""
    return name in sets.names or sets.below(name, ".")


class _Names:
    """Failing names, asked whether a name hangs off one of them (``a.b`` for ``a.b.c`` or ``a.b(k=)``). Only
    prefixes as long as a held name are tried: the cost does not grow with the name's length or the set's size."""

    def __init__(self, names=()):
        self.names: set = set()
        self.lengths: set = set()
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        self.names.add(name)
        self.lengths.add(len(name))

    def below(self, name: str, separators: str) -> bool:
        return any(n < len(name) and name[n] in separators and name[:n] in self.names for n in self.lengths)


SUGGEST_BUDGET = 1_000_000  # names compared for close matches in one check; past it, findings get none
SUGGEST_MAX_LENGTH = 200  # a longer missing name or keyword gets no close matches


def suggest(finding: Finding, surface: Surface) -> list[str]:
    """Close names (difflib) in the module or class where the name was looked for, or close keywords. The pool of
    each subject is built once; all suggestions of one check together compare at most ``SUGGEST_BUDGET`` names."""
    failure = finding._failure
    if failure is None or not failure.wanted or not failure.subject or len(failure.wanted) > SUGGEST_MAX_LENGTH:
        return []
    keywords = finding.kind in (UNEXPECTED_KEYWORD, MISSING_REQUIRED)
    pool = _suggestion_pool(surface, failure.subject, keywords)
    spent = surface._memo.get("suggest-spent", 0) + len(pool)
    surface._memo["suggest-spent"] = spent
    if not pool or spent > SUGGEST_BUDGET:
        return []
    key = ("suggested", failure.wanted, failure.subject, keywords)  # a name missing at many lines: compared once
    if key not in surface._memo:
        others = [name for name in pool if name != failure.wanted]  # "missing required x": x is no alternative
        surface._memo[key] = difflib.get_close_matches(failure.wanted, others, n=3, cutoff=0.6)
    return list(surface._memo[key])


def _suggestion_pool(surface: Surface, subject: str, keywords: bool) -> list[str]:
    key = ("suggest-pool", subject, keywords)
    if key in surface._memo:
        return surface._memo[key]
    res = surface.resolve(subject)
    pool: set[str] = set()
    for t in res.targets if res.ok else []:
        if keywords:
            pool |= {p[0] for p in (surface.call_signature(t) or {PARAMS: []})[PARAMS]}
        else:
            pool |= set(surface.names_in(t))
    surface._memo[key] = sorted(pool)
    return surface._memo[key]


def by_use(findings: list) -> list[tuple]:
    """(use, its findings) pairs: a call with many failing keywords is one use with many findings, evaluated once
    per release rather than once per finding."""
    groups: dict[int, tuple] = {}
    for f in findings:
        if f._use is not None:
            groups.setdefault(id(f._use), (f._use, []))[1].append(f)
    return list(groups.values())


def histories(findings: list, releases: dict[str, Surface], candidate: str | None) -> dict[int, dict]:
    """``history`` of every finding, by ``id(finding)``; each use is evaluated once per release."""
    if not releases:
        return {}
    present: dict[int, list] = {id(f): [] for f in findings}
    groups = by_use(findings)
    for version, surface in releases.items():
        for use, group in groups:
            failures, notes = evaluate(use, surface)
            failing = _Names(f.name for f in failures)
            for f in group:
                works = (not failures and not notes) if f.kind == DEPRECATED else not _blocked(failing, f.name)
                if works:
                    present[id(f)].append(version)
    return {id(f): _history(f, present[id(f)], list(releases), candidate) for f in findings if f._use is not None}


def history(finding: Finding, releases: dict[str, Surface], candidate: str | None) -> dict:
    """Which known releases the same use works on, and where it was added or removed relative to the candidate."""
    return histories([finding], releases, candidate).get(id(finding), {})


def _history(finding: Finding, present: list, ordered: list, candidate: str | None) -> dict:
    out: dict = {"works_in": _ranges(present, ordered)}
    if not present:
        return out
    try:
        cand = str(_v.parse(candidate)) if candidate else None
    except VersionError:
        cand = None
    if cand is not None:
        newer_present = [v for v in present if _v.is_newer(v, cand)]
        older_present = [v for v in present if not _v.is_newer(v, cand)]
        if older_present and not any(_v.at_least(v, cand) and _v.at_least(cand, v) for v in present):
            last = older_present[-1]
            after = [v for v in ordered if _v.is_newer(v, last) and v not in present]
            if after:
                out["last_in" if finding.kind != DEPRECATED else "last_undeprecated_in"] = last
                out["removed_in" if finding.kind != DEPRECATED else "deprecated_in"] = after[0]
        elif newer_present and not older_present:
            out["added_in"] = newer_present[0]
    return out


def _blocked(failing: _Names, name: str) -> bool:
    """A failure in ``failing`` also takes ``name`` down: the same name, or the module/callable it hangs off."""
    return name in failing.names or failing.below(name, ".(")


def _ranges(present: list, ordered: list) -> list[str]:
    """Contiguous runs of ``present`` in ``ordered``: ["0.7.0..0.16.1", "0.19.2"]."""
    return [r[0] if len(r) == 1 else f"{r[0]}..{r[-1]}" for r in _v.runs(present, ordered)]


def summary(findings) -> dict:
    """Counts of the findings by what they mean for the report."""
    return {"breaking": sum(1 for f in findings if f.breaks and not f.on_against),
            "guarded": sum(1 for f in findings if f.kind in BREAKING and f.guarded),
            "also_on_against": sum(1 for f in findings if f.breaks and f.on_against),
            "deprecated": sum(1 for f in findings if f.kind == DEPRECATED),
            "not_shipped": sum(1 for f in findings if f.kind == NOT_SHIPPED)}
