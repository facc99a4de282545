# SPDX-License-Identifier: Apache-2.0
"""The companion window: rows a companion's releases, columns the pins, each cell what the surface gate says of
the release's own code on that pin (ok, breaks with the first break, untested with the reason), with what a real
install of the pair did where one was recorded."""
from __future__ import annotations

from dataclasses import dataclass, field

from .... import version as _v
from ....errors import CompatError
from ...text import md_code, md_text
from ..surface.project import scan_project
from ..surface.window import reports_for
from .catalog import Companion, default_pins, recorded_installs
from .source import release_files, release_tree, unpacked_releases

OK, BREAKS, UNTESTED = "ok", "breaks", "untested"
DEFAULT_LAST = 10  # releases, newest first: about 18 months of Megatron-Bridge and Megatron-FSDP


@dataclass
class Cell:
    status: str  # OK | BREAKS | UNTESTED
    first_break: str = ""  # "path:line name (kind)" of the first unguarded break
    breaking: int = 0
    guarded: int = 0
    reason: str = ""  # why untested
    real: dict | None = None  # the recorded install of the pair, when there is one

    def to_dict(self) -> dict:
        return {"status": self.status, "first_break": self.first_break, "breaking": self.breaking,
                "guarded": self.guarded, "reason": self.reason, "real": self.real}


@dataclass
class CompanionWindow:
    companion: Companion
    releases: list  # companion releases, oldest first
    pins: list
    cells: dict  # (release, pin) -> Cell
    notes: list = field(default_factory=list)

    def newest_good(self) -> tuple[str, str] | None:
        """The newest (companion release, pin) pair the gate finds nothing unguarded in, newest release first."""
        for release in reversed(self.releases):
            for pin in reversed(self.pins):
                if self.cells[(release, pin)].status == OK:
                    return release, pin
        return None

    def best_fit(self, release: str) -> str | None:
        """The pin with the fewest unguarded breaks for ``release`` (the newest of a tie): the release the
        companion's code reads as written for, when no pin is clean."""
        tested = [p for p in self.pins if self.cells[(release, p)].status != UNTESTED]
        if not tested:
            return None
        fewest = min(self.cells[(release, p)].breaking for p in tested)
        return [p for p in tested if self.cells[(release, p)].breaking == fewest][-1]

    @property
    def exit_code(self) -> int:
        return 0 if self.newest_good() else 1

    def to_dict(self) -> dict:
        good = self.newest_good()
        return {"companion": self.companion.name, "package": self.companion.package,
                "releases": self.releases, "pins": self.pins,
                "newest_known_good": {"release": good[0], "pin": good[1]} if good else None,
                "best_fit": {r: self.best_fit(r) for r in self.releases},
                "cells": [dict(self.cells[(r, p)].to_dict(), release=r, pin=p)
                          for r in self.releases for p in self.pins],
                "notes": self.notes, "exit_code": self.exit_code}

    def to_markdown(self) -> str:
        good = self.newest_good()
        lines = [f"# {self.companion.package} x megatron-core", "",
                 f"- {self.companion.why}",
                 "- each cell: what the surface gate finds in the companion's own code on that megatron-core "
                 "(ok: nothing unguarded breaks; breaks: the first unguarded break), and what installing the pair "
                 "did where it was recorded",
                 "- newest known-good pair: " + (f"{self.companion.package}=={good[0]} with megatron-core=={good[1]}"
                                                 if good else "none")]
        lines += [f"- note: {md_text(n)}" for n in self.notes]
        lines += ["", f"| {self.companion.package} | " + " | ".join(self.pins) + " |",
                  "|---|" + "---|" * len(self.pins)]
        for release in reversed(self.releases):
            fit = self.best_fit(release)
            cells = [_short(self.cells[(release, p)]) + (" **fit**" if p == fit else "") for p in self.pins]
            lines.append(f"| {release} | " + " | ".join(cells) + " |")
        lines += ["", "**fit**: the pin with the fewest unguarded breaks for that release (the newest of a tie)"]
        broken = [(r, p) for r in reversed(self.releases) for p in self.pins if self.cells[(r, p)].status == BREAKS]
        if broken:
            lines += ["", "## First break per cell", ""]
            lines += [f"- {r} on {p}: {md_code(self.cells[(r, p)].first_break)}"
                      + (f" and {self.cells[(r, p)].breaking - 1} more" if self.cells[(r, p)].breaking > 1 else "")
                      for r, p in broken]
        untested = [(r, p) for r in reversed(self.releases) for p in self.pins
                    if self.cells[(r, p)].status == UNTESTED]
        if untested:
            lines += ["", "## Untested", ""]
            lines += [f"- {r} on {p}: {md_text(self.cells[(r, p)].reason)}" for r, p in untested]
        return "\n".join(lines)


def _short(cell: Cell) -> str:
    mark = {OK: "ok", BREAKS: f"breaks ({cell.breaking})", UNTESTED: "untested"}[cell.status]
    if cell.real:
        mark += f" / install {cell.real['outcome']}"
    return mark


def choose_releases(listed: list, wanted: list | None, last: int) -> list:
    """``wanted`` (each must be listed), else the newest ``last`` of ``listed``; oldest first."""
    if wanted:
        missing = [v for v in wanted if not any(_v.same(v, x) for x in listed)]
        if missing:
            raise CompatError(f"--releases {', '.join(missing)}: not a final, non-yanked release on the index "
                              f"(listed: {', '.join(listed[-12:])})")
        return _v.sorted_versions(wanted)
    return listed[-last:] if last > 0 else list(listed)


def companion_window(companion: Companion, *, releases: list | None = None, last: int = DEFAULT_LAST,
                     pins: list | None = None) -> CompanionWindow:
    """Scan each chosen release of ``companion`` and check it against every pin."""
    pins = _v.sorted_versions(pins or default_pins())
    notes: list = []
    try:
        listed = release_files(companion)
    except CompatError as exc:  # offline: the releases already unpacked in the cache
        listed = unpacked_releases(companion.package)
        if not listed:
            raise
        notes.append(f"releases from the cache (the index is unreachable: {exc})")
    chosen = choose_releases(listed, releases, last)
    installs = recorded_installs(companion.name)
    cells: dict = {}
    for release in chosen:
        row = release_row(companion, release, pins)
        for pin in pins:
            cell = row[pin]
            cell.real = installs.get((release, pin))
            cells[(release, pin)] = cell
    return CompanionWindow(companion, chosen, pins, cells, notes)


def release_row(companion: Companion, release: str, pins: list) -> dict:
    """pin -> Cell for one companion release; a release whose wheel cannot be read is untested on every pin."""
    try:
        scan = scan_project(release_tree(companion, release))
    except CompatError as exc:
        return {pin: Cell(UNTESTED, reason=f"its wheel was not read: {exc}") for pin in pins}
    if not scan.uses:
        return {pin: Cell(UNTESTED, reason="its code uses nothing of megatron") for pin in pins}
    reports, _notes = reports_for(scan, pins)
    return {pin: cell_of(reports[pin]) for pin in pins}


def cell_of(report) -> Cell:
    breaking = report.breaking
    guarded = sum(1 for f in report.findings if f.guarded)
    if not breaking:
        return Cell(OK, guarded=guarded)
    first = breaking[0]
    return Cell(BREAKS, first_break=f"{first.path}:{first.line} {first.name} ({first.kind})",
                breaking=len(breaking), guarded=guarded)
