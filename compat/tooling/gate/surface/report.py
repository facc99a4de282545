# SPDX-License-Identifier: Apache-2.0
"""The surface gate as markdown: breaks first, then what the project already guards, deprecations, not shipped.

Every piece of text that comes from the project or the candidate goes through ``md_text``/``md_code``.
"""
from __future__ import annotations

from collections import defaultdict

from ...text import md_code, md_text
from . import check as c

_MAX_ROWS = 200  # per section; the JSON output has every finding


def cell_code(text) -> str:
    """Inline code inside a table cell: a ``|`` would end the cell even inside backticks."""
    return md_code(text).replace("|", "\\|")


def _where(f) -> str:
    more = f" (+{len(f.also_at)} more)" if f.also_at else ""
    return f"{cell_code(f'{f.path}:{f.line}')}{more}"


def _table(findings, with_guard: bool = False) -> list[str]:
    head = "| where | name | kind | " + ("guard | " if with_guard else "") + "candidate has instead |"
    lines = [head, "|" + "---|" * (5 if with_guard else 4)]
    for f in findings[:_MAX_ROWS]:
        guard = f" {md_text(f.guard or '')} |" if with_guard else ""
        lines.append(f"| {_where(f)} | {cell_code(f.name)} | {f.kind} |{guard} {md_text(f.instead) or '—'} |")
    if len(findings) > _MAX_ROWS:
        lines.append(f"\n_{len(findings) - _MAX_ROWS} more in `--json`_")
    return lines


def _not_shipped(findings) -> list[str]:
    by_package = defaultdict(list)
    for f in findings:
        by_package[".".join(f.name.split(".")[:2])].append(f)
    lines = []
    for package, items in sorted(by_package.items()):
        files = sorted({f.path for f in items})
        first = ", ".join(md_code(f"{f.path}:{f.line}") for f in items[:3])
        lines.append(f"- {md_code(package)}: {len(items)} uses in {len(files)} files (first: {first}); "
                     f"{md_text(items[0].instead)}")
    return lines


def markdown(report) -> str:
    counts = c.summary(report.findings)
    verdict = "BREAKS" if report.exit_code else "OK"
    scan = report.scan
    lines = [f"# Surface gate: megatron-core {md_text(report.candidate)} on {md_code(report.project)}: {verdict}", "",
             f"- candidate: {md_code(report.source)}",
             f"- project: {scan.files} Python files read, {scan.megatron_files} use megatron ({len(scan.uses)} uses)"]
    if scan.own_packages:
        lines.append("- the project's own packages (not checked): " + ", ".join(md_code(p) for p in scan.own_packages))
    if scan.skipped:
        shown = ", ".join(f"{md_code(p)} ({md_text(why)})" for p, why in scan.skipped[:5])
        lines.append(f"- skipped {len(scan.skipped)} files: {shown}")
    if report.against:
        lines.append(f"- against: {md_text(report.against)} (failures that exist there too are listed apart)")
    if report.history_releases:
        lines.append(f"- history from {len(report.history_releases)} cached releases "
                     f"({report.history_releases[0]}..{report.history_releases[-1]})")
    lines += [f"- note: {md_text(n)}" for n in report.notes]
    lines.append(f"- {counts['breaking']} unguarded breaks, {counts['guarded']} guarded, "
                 f"{counts['deprecated']} deprecated, {counts['not_shipped']} not shipped in the wheel"
                 + (f", {counts['also_on_against']} failing on {md_text(report.against)} too" if report.against else "")
                 + f" (exit {report.exit_code})")
    sections = [
        ("Breaks (unguarded)", [f for f in report.findings if f.breaks and not f.on_against], False),
        ("Guarded (the project handles these; a \"conditional:\" one fails only under the condition named)",
         [f for f in report.findings if f.kind in c.BREAKING and f.guarded], True),
        ("Deprecated", [f for f in report.findings if f.kind == c.DEPRECATED], True),
    ]
    if report.against:
        sections.append((f"Failing on {md_text(report.against)} too (not caused by this candidate)",
                         [f for f in report.findings if f.breaks and f.on_against], False))
    for title, items, with_guard in sections:
        lines += ["", f"## {title}", ""]
        lines += _table(items, with_guard) if items else ["_none_"]
    shipped = [f for f in report.findings if f.kind == c.NOT_SHIPPED]
    lines += ["", "## Not shipped in the wheel (not checked)", ""]
    lines += _not_shipped(shipped) if shipped else ["_none_"]
    return "\n".join(lines)
