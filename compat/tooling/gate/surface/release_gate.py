# SPDX-License-Identifier: Apache-2.0
"""The surface gate for one candidate: scan the project, model the candidate, check, add history and suggestions."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from .... import version as _v
from ....errors import VersionError
from ..candidate import GateUsageError, locate
from . import check as c
from .annotated import kept_where_it_worked
from .cache import cached_wheels, model_for, release_models, save_models, shipped_modules
from .lookup import Surface
from .overrides import check_call_sites, check_inherited, check_overrides, previous_release
from .project import ProjectScan, scan_project
from .swallowed import mark_swallowed
from .switched_off import name_what_turns_off

_NAME_KINDS = (c.MISSING_MODULE, c.MISSING_NAME, c.MISSING_MEMBER, c.NOT_SHIPPED)
_BARE_VERSION = re.compile(r"^\s*v?\d+(\.\d+)*\S*\s*$")


@dataclass
class SurfaceReport:
    candidate: str  # version, or the file name when unknown
    source: str
    project: str
    scan: ProjectScan
    findings: list
    against: str | None = None
    history_releases: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def count(self, predicate) -> int:
        return sum(1 for f in self.findings if predicate(f))

    @property
    def breaking(self) -> list:
        return [f for f in self.findings if f.breaks and not f.on_against]

    @property
    def exit_code(self) -> int:
        return 1 if self.breaking else 0

    def to_dict(self) -> dict:
        return {"candidate": self.candidate, "source": self.source, "project": self.project,
                "against": self.against, "exit_code": self.exit_code,
                "summary": c.summary(self.findings),
                "scan": {"files": self.scan.files, "megatron_files": self.scan.megatron_files,
                         "uses": len(self.scan.uses), "skipped": [list(s) for s in self.scan.skipped],
                         "project_packages": self.scan.own_packages},
                "history_releases": self.history_releases, "notes": self.notes,
                "findings": [f.to_dict() for f in self.findings]}

    def to_markdown(self) -> str:
        from .report import markdown

        return markdown(self)


def candidate_path(spec: str) -> Path:
    """A wheel/sdist/checkout path for CANDIDATE or --against (a bare version means that release)."""
    text = str(spec)
    if not Path(text).expanduser().exists() and _BARE_VERSION.match(text):
        text = f"megatron-core=={text.strip().lstrip('v')}"
    path, _yanked = locate(text)
    return path


def label(model: dict, source: str) -> str:
    return model.get("version") or f"{Path(source).name} (version unknown)"


def enrich(findings: list, surface: Surface, releases: dict, candidate_version: str | None,
           wheel: bool = True, shipped: set | None = None) -> list:
    """``findings`` with close names, the releases a use works in, and "not shipped" for modules no known wheel
    ever had.

    A wheel ships part of Megatron-LM outside megatron.core (megatron.training without its tokenizer, ...): a
    module there that no known wheel had comes from a checkout, not from a removal. A checkout candidate ships
    what it has, so nothing is promoted there. ``shipped``: the modules any cached wheel ships (from their file
    lists); without it, the releases' models say."""
    histories = c.histories(findings, releases, candidate_version)
    out = []
    for f in findings:
        f = replace(f, close=c.suggest(f, surface), history=histories.get(id(f), {}))
        top = ".".join(f.name.split(".")[:2])
        ever = f.name in shipped if shipped is not None else bool(f.history.get("works_in"))
        if wheel and f.kind == c.MISSING_MODULE and top != "megatron.core" and releases and not ever:
            out.append(replace(f, kind=c.NOT_SHIPPED, instead=f"no cached megatron-core wheel ships {f.name}"))
            continue
        out.append(replace(f, instead="; ".join(text for text in (f.instead, describe(f)) if text)))
    return out


def describe(f) -> str:
    parts = []
    if f.kind == c.NOT_SHIPPED:
        works = f.history.get("works_in")
        parts.append(f"ships in the wheel in {', '.join(works)}" if works else "no cached wheel ships it")
    if f.close:
        parts.append("close: " + ", ".join(f.close))
    h = f.history
    if f.kind == c.MISSING_REQUIRED and ("removed_in" in h or "added_in" in h):
        # what changed is the parameter, not the callable: it became required (or stopped being required)
        param = f._failure.wanted if f._failure else "it"
        if "removed_in" in h:
            parts.append(f"{param} is required from {h['removed_in']} (the call works up to {h['last_in']})")
        else:
            parts.append(f"the call works from {h['added_in']}")
        h = {k: v for k, v in h.items() if k not in ("removed_in", "added_in", "last_in")}
    if "removed_in" in h:
        parts.append(f"last in {h['last_in']}, removed in {h['removed_in']}")
    if "deprecated_in" in h:
        parts.append(f"deprecated in {h['deprecated_in']}")
    if "added_in" in h:
        parts.append(f"added in {h['added_in']}")
    if h.get("works_in") and not any(k in h for k in ("removed_in", "added_in", "deprecated_in")) \
            and f.kind != c.NOT_SHIPPED and not (f.kind == c.MISSING_REQUIRED and f.history.get("removed_in")):
        parts.append(f"works in {', '.join(h['works_in'])}")
    if "works_in" in h and not h["works_in"] and f.kind != c.NOT_SHIPPED:
        parts.append("works in none of the cached releases")  # the cache, not every release there is
    return "; ".join(parts)


def mark_against(findings: list, baseline: Surface | None, uses: list = ()) -> list:
    """``findings`` with ``on_against``: the same failure exists on the --against release (not caused by this
    candidate). A failure by name is matched by location: any use on that line failing by name there (a missing
    name that became a missing module is the same failure)."""
    if baseline is None:
        return findings  # on_against stays None: nothing else sets it
    at: dict = {}
    for use in uses:
        at.setdefault((use.path, use.line), []).append(use)
    against: dict[int, bool | None] = {}
    for use, group in c.by_use(findings):  # each use once, however many findings it has
        failures, notes = c.evaluate(use, baseline)
        failing = {(x.name, x.kind) for x in failures}
        here = None  # the kinds of the failures by name of any use on this line, on the --against release
        for f in group:
            if f.kind == c.DEPRECATED:
                against[id(f)] = bool(notes) and not failures
            elif f.kind in _NAME_KINDS:
                if here is None:
                    here = {x.kind for u in at.get((use.path, use.line), [use])
                            for x in (failures if u is use else c.evaluate(u, baseline)[0]) if x.kind in _NAME_KINDS}
                # a package that release's wheel does not ship is not known there, not missing: a name the candidate
                # lacks there is this candidate's failure (megatron.training before 0.17.0)
                against[id(f)] = bool(here) if f.kind == c.NOT_SHIPPED else bool(here - {c.NOT_SHIPPED})
            else:
                against[id(f)] = (f.name, f.kind) in failing
    return [replace(f, on_against=against.get(id(f))) for f in findings]


def check_model(scan: ProjectScan, model: dict, source: str, *, releases: dict | None = None,
                baseline: Surface | None = None, against: str | None = None,
                shipped: set | None = None) -> SurfaceReport:
    surface = Surface(model)
    previous = baseline if baseline is not None else previous_release(releases or {}, model.get("version"))
    findings = kept_where_it_worked(c.check(scan, surface), previous, c.evaluate)
    overrides = check_overrides(scan, surface, previous)
    call_sites = check_call_sites(scan, surface, overrides)
    overrides += call_sites
    findings = mark_swallowed(sorted(findings + overrides + check_inherited(scan, surface, releases or {}),
                                     key=lambda f: (f.path, f.line, f.name)), scan.sources)
    findings = name_what_turns_off(findings, scan.sources)
    findings = enrich(findings, surface, releases or {}, model.get("version"), wheel=model.get("kind") != "tree",
                      shipped=shipped)
    findings = mark_against(findings, baseline, scan.uses)
    if baseline is not None:  # a call-site misfit the --against release has too is not this candidate's
        sites = {(f.path, f.line, f.name, f.use) for f in call_sites}
        before = {(f.path, f.line, f.name) for f in check_call_sites(scan, baseline, [])}
        findings = [replace(f, on_against=(f.path, f.line, f.name) in before)
                    if (f.path, f.line, f.name, f.use) in sites else f for f in findings]
    notes = [model["cache"]] if model.get("cache") else []
    if model.get("unparsed"):
        notes.append(f"{len(model['unparsed'])} candidate files did not parse (their names are accepted): "
                     + ", ".join(model["unparsed"][:5]))
    return SurfaceReport(label(model, source), source, scan.root, scan, findings, against,
                         list(releases or {}), notes)


def surface_gate(candidate: str, project, against: str | None = None, *, history: bool = True) -> SurfaceReport:
    """What CANDIDATE breaks in PROJECT's code, file and line (``against``: the release the project runs on now)."""
    scan = scan_project(project)
    model = model_for(candidate_path(candidate))
    baseline = None
    if against is not None:
        baseline_model = model_for(candidate_path(against))
        baseline = Surface(baseline_model)
        against = baseline_model.get("version") or str(against)
    releases = history_releases(model) if history else {}
    report = check_model(scan, model, str(candidate), releases=releases, baseline=baseline, against=against,
                         shipped=shipped_modules() if history else None)
    report.notes += history_note(releases, cached_wheels()) if history else []
    save_models()
    return report


def history_releases(model: dict) -> dict:
    """The releases for the history column: those already modelled, and the release before the candidate (the
    override check's baseline), modelled now if need be. A wheel nobody ran against yet is not parsed for it."""
    known = release_models(modelled_only=True)
    version = model.get("version")
    if version and model.get("kind") != "tree" and version in cached_wheels():
        known[version] = model
    wheels = cached_wheels()
    try:
        older = [v for v in wheels if version and _v.is_newer(version, v)]
    except VersionError:
        older = []
    before = max(older, key=_v.parse) if older else None
    if before is not None and before not in known:
        known.update(release_models({before}))
    return {v: Surface(known[v]) for v in _v.sorted_versions(known)}


def history_note(releases: dict, wheels: dict) -> list[str]:
    if len(releases) >= len(wheels):
        return []
    return [f"history from the {len(releases)} of {len(wheels)} cached releases modelled so far (a release is "
            "modelled the first time a run uses it as candidate, --against or in --window)"]


def parse_window(text: str) -> tuple[str, str]:
    low, sep, high = str(text).partition("..")
    if not sep or not low.strip() or not high.strip():
        raise GateUsageError(f"--window {text!r}: expected LOW..HIGH, e.g. 0.16.1..0.19.2")
    try:
        low, high = str(_v.parse(low)), str(_v.parse(high))
    except VersionError as exc:
        raise GateUsageError(f"--window {text!r}: {exc}") from None
    if _v.is_newer(low, high):
        raise GateUsageError(f"--window {text!r}: {low} is newer than {high}")
    return low, high
