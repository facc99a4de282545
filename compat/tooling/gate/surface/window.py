# SPDX-License-Identifier: Apache-2.0
"""``--window LOW..HIGH``: the surface gate on every release in a range, as one table (use x release)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .... import version as _v
from ....errors import CandidateError
from ... import refresh
from ...text import md_code, md_text
from ..candidate import GateUsageError, fetch_release
from . import check as c
from .cache import cached_wheels, model_for, release_models, save_models, shipped_modules
from .lookup import Surface
from .project import scan_project
from .release_gate import check_model, history_note, parse_window
from .report import cell_code

OK, BREAK, GUARDED, DEPRECATED, NOT_SHIPPED = "ok", "BREAKS", "guarded", "deprecated", "not shipped"


@dataclass
class WindowReport:
    project: str
    window: tuple
    releases: list
    reports: dict  # version -> SurfaceReport
    listed_from: str
    notes: list = field(default_factory=list)

    @property
    def supported(self) -> list:
        return [v for v in self.releases if self.reports[v].exit_code == 0]

    @property
    def exit_code(self) -> int:
        return 0 if len(self.supported) == len(self.releases) else 1

    def rows(self) -> list:
        """One row per (path, line, name) failing somewhere: its state on each release."""
        table: dict = {}
        for version in self.releases:
            for f in self.reports[version].findings:
                row = table.setdefault((f.path, f.line, f.name), {"kind": f.kind, "cells": {}})
                row["cells"][version] = _cell(f)
                if f.breaks:
                    row["kind"] = f.kind
        return [{"path": p, "line": line, "name": n, "kind": row["kind"],
                 "cells": {v: row["cells"].get(v, OK) for v in self.releases}}
                for (p, line, n), row in sorted(table.items())]

    def to_dict(self) -> dict:
        return {"project": self.project, "window": list(self.window), "releases": self.releases,
                "releases_from": self.listed_from, "supported": self.supported, "exit_code": self.exit_code,
                "per_release": {v: c.summary(self.reports[v].findings) for v in self.releases},
                "rows": self.rows(), "notes": self.notes,
                "findings": [dict(f.to_dict(), release=v) for v in self.releases for f in self.reports[v].findings]}

    def to_markdown(self, all_rows: bool = False) -> str:
        """Rows grouped under their file; a use that fails the same way on every release is counted, not listed,
        unless ``all_rows`` (the JSON has every row)."""
        lines = [f"# Surface gate window {self.window[0]}..{self.window[1]} on {md_code(self.project)}", "",
                 f"- releases ({md_text(self.listed_from)}): {', '.join(self.releases)}",
                 "- supported (no unguarded break): " + (", ".join(self.supported) or "none"),
                 f"- exit {self.exit_code}"]
        lines += [f"- note: {md_text(n)}" for n in self.notes]
        lines += ["", "| release | unguarded breaks | guarded | deprecated | not shipped |", "|---|---|---|---|---|"]
        for v in self.releases:
            s = c.summary(self.reports[v].findings)
            lines.append(f"| {v} | {s['breaking']} | {s['guarded']} | {s['deprecated']} | {s['not_shipped']} |")
        rows = [r for r in self.rows() if r["kind"] != c.NOT_SHIPPED]
        steady = [r for r in rows if len(set(r["cells"].values())) == 1]
        shown = rows if all_rows else [r for r in rows if len(set(r["cells"].values())) > 1]
        lines += ["", "## Uses that fail on some release", ""]
        if steady and not all_rows:
            lines += [f"_{len(steady)} uses fail the same way on every release of the window (not listed; "
                      "`--all-rows` lists them)_", ""]
        if shown:
            head = "| line | name | kind | " + " | ".join(self.releases) + " |"
            for path in dict.fromkeys(r["path"] for r in shown):
                lines += [f"### {md_code(path)}", "", head, "|" + "---|" * (3 + len(self.releases))]
                for r in (r for r in shown if r["path"] == path):
                    cells = " | ".join(r["cells"][v] for v in self.releases)
                    lines.append(f"| {r['line']} | {cell_code(r['name'])} | {r['kind']} | {cells} |")
                lines.append("")
        elif not steady:
            lines.append("_none_")
        shipped = sorted({".".join(r["name"].split(".")[:2]) for r in self.rows() if r["kind"] == c.NOT_SHIPPED})
        if shipped:
            lines += ["", "Not shipped in the wheel on some release (not checked there): "
                      + ", ".join(md_code(p) for p in shipped)]
        return "\n".join(lines)


def _cell(f) -> str:
    if f.kind == c.NOT_SHIPPED:
        return NOT_SHIPPED
    if f.kind == c.DEPRECATED:
        return DEPRECATED
    return GUARDED if f.guarded else BREAK


def releases_in(low: str, high: str) -> tuple[list, str, list]:
    """Final, non-yanked releases in [low, high] from the index; the wheel cache when the index is unreachable."""
    notes = []
    try:
        listed = refresh.list_releases()
        versions, source = [v for v, yanked in listed.items() if not yanked], "from the package index, non-yanked"
    except CandidateError as exc:
        versions, source = list(cached_wheels()), "from the wheel cache (index unreachable)"
        notes.append(str(exc))
    inside = [v for v in _v.sorted_versions(versions) if _v.at_least(v, low) and _v.at_least(high, v)]
    if not inside:
        raise GateUsageError(f"--window {low}..{high}: no release in that range ({source})")
    return inside, source, notes


def window(project, text: str, *, history: bool = True) -> WindowReport:
    low, high = parse_window(text)
    versions, source, notes = releases_in(low, high)
    reports, more = reports_for(scan_project(project), versions, history=history)
    return WindowReport(str(project), (low, high), versions, reports, source, notes + more)


def reports_for(scan, versions: list, *, history: bool = True) -> tuple[dict, list]:
    """The surface report of one scanned project on each release of ``versions`` (downloading the wheels the cache
    lacks), and the notes on the release history the findings were dated with."""
    notes: list = []
    cached = cached_wheels()
    wheels = {v: cached.get(v) or fetch_release(v) for v in versions}  # downloads what the cache lacks
    models = {v: model_for(wheels[v]) for v in versions}
    releases, shipped = release_history(models) if history else ({}, None)
    notes += history_note(releases, cached_wheels()) if history else []
    reports = {v: check_model(scan, models[v], f"megatron-core=={v}", releases=releases, shipped=shipped)
               for v in versions}
    save_models()
    return reports, notes


def release_history(models: dict) -> tuple[dict, set]:
    """The releases a finding is dated with (every modelled release and ``models``: version -> model), and the
    modules any cached wheel ships."""
    known = {**release_models(modelled_only=True), **models}
    return {v: Surface(known[v]) for v in _v.sorted_versions(known)}, shipped_modules()
