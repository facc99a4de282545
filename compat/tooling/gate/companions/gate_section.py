# SPDX-License-Identifier: Apache-2.0
"""The gate report's Companions section: which companion releases the candidate would break. Offline: it reads
the newest release tree of each companion that ``mcore-compat window --companion`` already unpacked into the cache,
and names the companions it has none of (nothing is downloaded during a gate run)."""
from __future__ import annotations

from pathlib import Path

from ....errors import CompatError
from ...text import bullet_section, md_code, md_prose
from ..surface.cache import model_for
from ..surface.project import scan_project
from ..surface.release_gate import check_model
from ..surface.window import release_history
from .catalog import companions
from .source import trees_dir, unpacked_releases
from .window import cell_of


def cached_release(package: str) -> tuple[str, Path] | None:
    """The newest release of ``package`` whose tree is in the cache."""
    releases = unpacked_releases(package)
    return (releases[-1], trees_dir() / f"{package}-{releases[-1]}") if releases else None


def companions_section(candidate: Path) -> dict:
    checked, not_checked = [], []
    context = None
    for name, companion in companions().items():
        hit = cached_release(companion.package)
        if hit is None:
            not_checked.append(name)
            continue
        release, tree = hit
        try:
            if context is None:
                model = model_for(candidate)
                releases, shipped = release_history({model["version"]: model} if model.get("version") else {})
                context = model, releases, shipped
            model, releases, shipped = context
            cell = cell_of(check_model(scan_project(tree), model, str(candidate), releases=releases,
                                       shipped=shipped))
        except CompatError as exc:
            checked.append({"companion": name, "release": release, "status": "untested", "reason": str(exc)})
            continue
        checked.append({"companion": name, "release": release, **cell.to_dict()})
    return {"checked": checked, "not_checked": not_checked}


def markdown_section(report) -> list[str]:
    data = report.sections.get("companions")
    if not data:
        return []
    lines = []
    for row in data["checked"]:
        head = f"{md_code(row['companion'] + '==' + row['release'])}: "
        if row["status"] == "breaks":
            more = f" and {row['breaking'] - 1} more" if row["breaking"] > 1 else ""
            lines.append(head + f"breaks, first {md_code(row['first_break'])}{more}")
        elif row["status"] == "ok":
            lines.append(head + "nothing unguarded breaks")
        else:
            lines.append(head + f"untested ({md_prose(row.get('reason', ''))})")
    if data["not_checked"]:
        lines.append("not checked (no release read yet; nothing is downloaded during a gate): "
                     + ", ".join(f"{md_code(n)} (`mcore-compat window --companion {n}`)" for n in data["not_checked"]))
    return bullet_section("Companions", lines)
