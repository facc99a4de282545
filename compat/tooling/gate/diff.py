# SPDX-License-Identifier: Apache-2.0
"""The gate's classifier: what changed between two snapshots of a config class, and how much it matters.

One path for every class of ``compat.configs.CONFIGS``; how each class is treated is data (``policy.POLICY``).
Breaking: something an existing config does stops working or silently changes: a field the shim maps, pins or reads
is removed, a default changes (users who leave the field unset get another value, whatever the shim reads), an old
value no longer fits the annotation, a new ``__post_init__`` check can reject a value the resolver sets, a class is
gone. Needs a decision: new fields, widened annotations (the shim refuses the new values until ``--accept``), removed
unpinned fields, new checks, checks that fire only when a new default-off field is set. Informational: doc-only
changes, reordering, spelling-only changes.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field

from ...annotations import type_key
from ...registry import Field, Schema
from .levels import NARROWED, WIDENED, annotation_fit, gated_by_new_field, keep_old_kwargs, new_checks
from .policy import policy

BREAKING, DECISION, INFO = "breaking", "needs a decision", "informational"
LEVELS = (BREAKING, DECISION, INFO)
DDP, OPT = "DistributedDataParallelConfig", "OptimizerConfig"
NAME_SIMILARITY, DOC_SIMILARITY = 0.6, 0.8  # difflib ratios above which an added field looks like a rename


@dataclass
class Change:
    level: str
    what: str  # removed, added, default, annotation, check, coercion, check-dropped, doc, order, missing
    field: str
    old: str | None = None
    new: str | None = None
    shim: str = ""  # what the shim will do
    config: str = DDP
    notes: list = field(default_factory=list)
    proposal: dict | None = None  # a renames.json entry
    kwargs: dict | None = None  # what to pass to keep the old behaviour (a default change)
    commit: str | None = None  # the upstream commit that introduced it (a git checkout candidate)


# ------------------------------------------------------------------------------------------ shim knowledge
def shim_fields(renames, rules) -> dict[str, list[str]]:
    """Every DDPConfig field the shim maps or pins, with why (from renames.json and rules.json)."""
    why: dict[str, list[str]] = {}
    for r in renames:
        why.setdefault(r["old"], []).append(f"renames.json maps it to {r['new']}")
        why.setdefault(r["new"], []).append(f"renames.json maps {r['old']} to it")
    for c in rules["constraints"]:
        for name in c["reads"]:
            why.setdefault(name, []).append(f"rule {c['id']} reads it")
        for name in c.get("sets", {}):
            why.setdefault(name, []).append(f"rule {c['id']} sets it")
    for name in rules["resolver_sets"]:
        why.setdefault(name, []).append("the resolver sets it")
    for name, rule in rules["value_rules"].items():
        why.setdefault(name, []).append(f"value rule {json.dumps(rule)}")
    return why


def _spelled(f: Field) -> str:
    return f"{f.annotation} = {f.default_text}"


def renamed_like(a: Field, b: Field) -> tuple[bool, float, float]:
    """Whether ``b`` looks like ``a`` renamed, with the name and doc similarity ratios (0.0 when not alike).

    ``real_quick_ratio``/``quick_ratio`` (upper bounds of ``ratio``) skip full comparisons that cannot reach the
    thresholds."""
    nm = difflib.SequenceMatcher(None, a.name, b.name)
    name_hit = nm.real_quick_ratio() >= NAME_SIMILARITY and nm.quick_ratio() >= NAME_SIMILARITY and \
        nm.ratio() >= NAME_SIMILARITY
    dm = difflib.SequenceMatcher(None, a.doc, b.doc) if a.doc and b.doc else None
    doc_hit = dm is not None and dm.real_quick_ratio() >= DOC_SIMILARITY and dm.quick_ratio() >= DOC_SIMILARITY \
        and dm.ratio() >= DOC_SIMILARITY
    if not (name_hit or doc_hit):
        return False, 0.0, 0.0
    return True, round(nm.ratio(), 2), round(dm.ratio(), 2) if dm is not None else 0.0


class RenameIndex:
    """Removed fields, indexed so that each added field is compared with a few likely originals, not with all.

    Up to ``EXHAUSTIVE`` pairs every pair is compared (the small, real case). Above that, candidates are the
    removed fields sharing name pieces (``_`` parts and character trigrams) or doc words with the added field;
    pieces shared by many fields are ignored and at most ``CAP`` candidates, best first, are compared. Either way
    at most ``MATCHES`` look-alikes are reported per field. Linear in the number of fields for fixed caps.
    """

    EXHAUSTIVE, CAP, COMMON, MATCHES = 40_000, 8, 64, 3

    def __init__(self, removed: list[Field], added_count: int):
        self.removed = removed
        self.exhaustive = len(removed) * max(added_count, 1) <= self.EXHAUSTIVE
        self.postings: dict[str, list[int]] = {}
        if not self.exhaustive:
            for i, f in enumerate(removed):
                for key in _pieces(f):
                    self.postings.setdefault(key, []).append(i)

    def candidates(self, f: Field) -> list[Field]:
        if self.exhaustive:
            return self.removed
        score: dict[int, int] = {}
        for key in _pieces(f):
            hits = self.postings.get(key, ())
            if len(hits) <= self.COMMON:
                for i in hits:
                    score[i] = score.get(i, 0) + 1
        return [self.removed[i] for i in sorted(score, key=lambda i: (-score[i], i))[:self.CAP]]

    def alike(self, f: Field) -> list[tuple[Field, float, float]]:
        """Up to ``MATCHES`` removed fields that ``f`` looks like a rename of (the likeliest first when indexed)."""
        out = []
        for gone in self.candidates(f):
            alike, names, docs = renamed_like(gone, f)
            if alike:
                out.append((gone, names, docs))
                if len(out) == self.MATCHES:
                    break
        return out


def _pieces(f: Field) -> set[str]:
    name = f.name.lower()
    pieces = {f"n:{p}" for p in name.split("_") if p}
    pieces |= {f"t:{name[i:i + 3]}" for i in range(max(len(name) - 2, 1))}
    pieces |= {f"d:{w}" for w in re.findall(r"[a-z0-9_]{4,}", f.doc.lower())[:40]}
    return pieces


_BACKTICKED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


# ------------------------------------------------------------------------------------------ the diff
class _Diff:
    def __init__(self, base: Schema, cand: Schema, renames, rules, version: str | None, read_by_shim=()):
        self.base, self.cand, self.renames, self.rules, self.version = base, cand, renames, rules, version
        self.pinned = shim_fields(renames, rules)
        for name in read_by_shim:
            self.pinned.setdefault(name, []).append(f"the resolver reads it off the user's {cand.class_name} by name")
        self.new_checks = new_checks(base, cand)
        self.resolver_sets = set(rules["resolver_sets"])
        self.removed = [f for f in base.fields if f.name not in cand]
        self.added = [f for f in cand.fields if f.name not in base]
        self.changes: list[Change] = []
        self.renames_from = {r["old"]: r for r in renames}
        self.index = RenameIndex(self.removed, len(self.added))
        self.deprecated_for = self._deprecations()
        self.post_init_news = self._post_init_news()

    def _deprecations(self) -> dict[str, list[Field]]:
        """Backticked name -> existing fields whose doc now says they are deprecated (one pass, not per field)."""
        out: dict[str, list[Field]] = {}
        for old in self.base.fields:
            new = self.cand.get(old.name)
            if new and new.doc != old.doc and "deprecat" in new.doc.lower():
                for name in set(_BACKTICKED.findall(new.doc)):
                    out.setdefault(name, []).append(old)
        return out

    def run(self) -> list[Change]:
        for f in self.removed:
            self._removed(f)
        for f in self.added:
            self._added(f)
        for old in self.base.fields:
            new = self.cand.get(old.name)
            if new is not None:
                self._changed(old, new)
        self._post_init()
        self._order()
        return self.changes

    def _add(self, *args, **kwargs):
        self.changes.append(Change(*args, **kwargs))

    def _removed(self, f: Field):
        why = self.pinned.get(f.name)
        to = self.renames_from.get(f.name, {}).get("new")
        if to and to in self.cand:
            shim = f"translates {f.name} to {to} (renames.json); confirm that mapping holds for this release"
        elif why:
            shim = (f"users who set {f.name} get UnsupportedFieldError (dropped with --lenient); update "
                    "renames.json / rules.json before accepting")
        else:
            shim = f"users who set {f.name} get UnsupportedFieldError (dropped with --lenient)"
        notes = [f"the shim maps or pins it: {'; '.join(why)}"] if why else ["users may set it"]
        self._add(BREAKING if why else DECISION, "removed", f.name, _spelled(f), None, shim, notes=notes)

    def _added(self, f: Field):
        notes, proposal = [f"doc: {f.doc}" if f.doc else "no doc comment"], None
        for gone, names, docs in self.index.alike(f):
            notes.append(f"looks like a rename of removed {gone.name} (name similarity {names}, doc {docs})")
            proposal = proposal or self._proposal(gone, f, f"name similarity {names}, doc similarity {docs}")
        for old in self.deprecated_for.get(f.name, ()):  # an old field whose doc now points here
            notes.append(f"{old.name}'s doc now says it is deprecated in favour of {f.name}")
            proposal = proposal or self._proposal(old, f, f"{old.name} is deprecated in favour of it")
        if f.name in self.cand.post_init_reads:
            notes.append(f"__post_init__ reads it{self._rule_note(f.name, 'reads')} ({self.post_init_news})")
        if f.required:
            shim = ("cannot build this release's config from any existing call: the field has no default, so every "
                    "caller must now pass it (the shim does not invent values)")
            self._add(BREAKING, "added", f.name, None, _spelled(f), shim, notes=notes + ["no default: required"],
                      proposal=proposal)
            return
        shim = (f"left at megatron's default ({f.default_text}) unless a user sets it; after --accept it is a "
                "canonical field (older releases: a non-default value raises UnsupportedFieldError)")
        self._add(DECISION, "added", f.name, None, _spelled(f), shim, notes=notes, proposal=proposal)

    def _proposal(self, old: Field, new: Field, why: str) -> dict:
        entry = {"old": old.name, "new": new.name, "since": self.version or "UNKNOWN", "note": f"gate: {why}"}
        if type_key(old.annotation) != type_key(new.annotation):
            entry["map"] = [[old.default, new.default]]
            entry["note"] += f"; {old.annotation} -> {new.annotation}: complete the value map"
        known = self.renames_from.get(old.name, {}).get("new") == new.name
        return {"renames.json": entry, "already_in_renames_json": known}

    def _changed(self, old: Field, new: Field):
        resolver = " (the resolver sets it)" if old.name in self.resolver_sets else ""
        if old.default != new.default:
            role = (f"the shim maps or pins it ({'; '.join(self.pinned[old.name])})" if old.name in self.pinned
                    else "the shim does not read it, so megatron's new default applies")
            self._add(BREAKING, "default", old.name, old.default_text, new.default_text,
                      f"users who leave {old.name} unset now get {new.default_text} instead of {old.default_text}"
                      f"{resolver}; to keep the old behaviour pass {keep_old_kwargs(old.name, old)}",
                      notes=[f"who is affected: every {self.cand.class_name} built without {old.name}; {role}"],
                      kwargs={old.name: old.default} if old.exact else None)
        elif old.default_text != new.default_text:
            self._add(INFO, "default", old.name, old.default_text, new.default_text, "same value, spelled differently")
        if type_key(old.annotation) != type_key(new.annotation):
            self._annotation(old, new, resolver)
        elif old.annotation != new.annotation:
            self._add(INFO, "annotation", old.name, old.annotation, new.annotation, "same type, spelled differently")
        if old.doc != new.doc:
            self._add(INFO, "doc", old.name, old.doc, new.doc, "nothing (documentation only)")

    def _annotation(self, old: Field, new: Field, resolver: str):
        fit = annotation_fit(old.annotation, new.annotation)
        gained = f" ({', '.join(fit.gained)})" if fit.gained else ""
        if fit.verdict == NARROWED:
            self._add(BREAKING, "annotation", old.name, old.annotation, new.annotation,
                      f"old values no longer fit: {', '.join(fit.lost)}; configs that set them are refused by this "
                      f"release (and by the shim once it is accepted){resolver}", notes=["narrowed"])
        elif fit.verdict == WIDENED:
            self._add(DECISION, "annotation", old.name, old.annotation, new.annotation,
                      f"every old value still fits; the shim refuses the new values{gained} until --accept records "
                      f"this release{resolver}", notes=["widened: not breaking"])
        else:
            self._add(DECISION, "annotation", old.name, old.annotation, new.annotation,
                      f"cannot tell whether every old value still fits; check by hand{resolver}",
                      notes=["the annotation is not fully understood"])

    def _rule_note(self, name: str, key: str) -> str:
        ids = self._rules_for(name, key)
        return f"; modelled by rules.json {', '.join(ids)}" if ids else "; no rules.json constraint models it"

    def _rules_for(self, name: str, key: str) -> list[str]:
        """Constraints that model a check (key='reads') or coercion (key='sets') of ``name`` in the candidate."""
        return [c["id"] for c in self.rules["constraints"]
                if name in c.get(key, ()) and set(c["reads"]) <= self.cand.post_init_reads]

    def _post_init_news(self) -> str:
        reads = sorted(self.cand.post_init_reads - self.base.post_init_reads)
        writes = sorted(self.cand.post_init_writes - self.base.post_init_writes)
        return "new in this __post_init__: " + "; ".join(
            part for part in (f"reads {', '.join(reads)}" if reads else "",
                              f"writes {', '.join(writes)}" if writes else "") if part)

    def _post_init(self):
        existing = set(self.base.names)
        for what, key, new_names, old_names in (
                ("check", "reads", self.cand.post_init_reads, self.base.post_init_reads),
                ("coercion", "sets", self.cand.post_init_writes, self.base.post_init_writes)):
            verb = "reads" if what == "check" else "writes"
            mirror = "pre-checks" if what == "check" else "mirrors"
            for name in sorted((set(new_names) - set(old_names)) & existing):  # new fields: see "added"
                rules = self._rules_for(name, key)
                notes = [self.post_init_news]
                checks = [c for c in self.new_checks if name in c.reads] if what == "check" else []
                gates = {gated_by_new_field(c, self.base, self.cand) for c in checks}
                if name in self.resolver_sets:
                    level = BREAKING
                    shim = (f"the resolver sets {name}; the new {what} can reject or override its value"
                            + (f" (rules.json {', '.join(rules)} models it: make the resolver honour it)" if rules
                               else "; add a rules.json constraint and teach the resolver"))
                elif name in self.pinned:
                    level = DECISION if rules else BREAKING
                    notes.append(f"the shim pins it: {'; '.join(self.pinned[name])}")
                    shim = (f"{mirror} it with rules.json {', '.join(rules)}; confirm the rule matches"
                            if rules else
                            "nothing yet: no rules.json constraint models it, so the shim would pass values "
                            "megatron now rejects")
                else:
                    level = DECISION
                    shim = (f"{mirror} it with rules.json {', '.join(rules)}" if rules else
                            "megatron's own error surfaces at construction; consider a rules.json constraint")
                if checks and None not in gates:
                    level = DECISION  # cannot fire for a config written for the old release
                    names = sorted(gates)
                    which = names[0] if len(names) == 1 else "one of " + ", ".join(names)
                    notes.append(f"fires only when {which} (new in this release, default off) is set: it cannot "
                                 f"reject a config written for {self.base.version}")
                    shim = f"no existing config trips it (it needs {which} set); once a user sets it: {shim}"
                self._add(level, what, name, None, f"__post_init__ now {verb} {name}", shim, notes=notes)
            for name in sorted(set(old_names) - set(new_names)):
                stop = [c["id"] for c in self.rules["constraints"] if name in c.get(key, ())]
                self._add(INFO, "check-dropped", name, f"__post_init__ {verb} {name}", None,
                          f"rules that need it stop applying (feature detection): {', '.join(stop) or 'none'}")

    def _order(self):
        common_old = [n for n in self.base.names if n in self.cand]
        common_new = [n for n in self.cand.names if n in self.base]
        if common_old != common_new:
            self._add(INFO, "order", "(fields)", ", ".join(common_old), ", ".join(common_new),
                      "nothing: the shim passes keyword arguments")
        pos = {n: i for i, n in enumerate(self.cand.names)}
        last_existing = max((pos[n] for n in self.cand.names if n in self.base), default=-1)
        inserted = [f.name for f in self.added if pos[f.name] < last_existing]
        if inserted:
            self._add(INFO, "order", "(fields)", None, f"inserted before existing fields: {', '.join(inserted)}",
                      "nothing: the shim passes keyword arguments (positional construction would shift)")


_NO_RULES = {"constraints": [], "resolver_sets": [], "value_rules": {}}


def diff_config(key: str, base: Schema, cand: Schema, version: str | None, *, renames, rules) -> list[Change]:
    """Every change of config ``key`` between ``base`` and ``cand``, classified under the class's policy."""
    pol = policy(key)
    changes = _Diff(base, cand, renames, rules if pol["rules"] == "ddp" else _NO_RULES, version,
                    pol["read_by_shim"]).run()
    config = cand.class_name
    own = {f.name for f in (*base.fields, *cand.fields) if f.owner == config} if pol["own_fields"] else None
    summary = pol["checks"] == "summary"
    out = []
    for c in changes:
        c.config = config
        if own is not None and c.field not in own:
            continue
        if summary and c.what in ("check", "coercion", "check-dropped"):
            continue
        if c.what == "added" and c.level == DECISION and not c.proposal and pol["added"] == "info" \
                and c.field not in pol["read_by_shim"]:
            c.level = INFO
        if summary:
            c.notes = [n if not n.startswith("__post_init__ reads it") else
                       "__post_init__ reads it (its checks come from the source and are pre-checked where evaluable)"
                       for n in c.notes]
        out.append(c)
    fresh = new_checks(base, cand)
    if summary and fresh and own is None:
        checked = sum(1 for x in fresh if x.skip is None)
        gated = sum(1 for x in fresh if gated_by_new_field(x, base, cand))
        out.append(Change(INFO, "check", "(__post_init__)", None,
                          f"{len(fresh)} new or changed checks, {checked} of them pre-checked, {gated} of them firing "
                          "only when a new default-off field is set",
                          "pre-checks the evaluable ones from the registry after --accept", config))
    return out

