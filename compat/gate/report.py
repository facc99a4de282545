"""The gate report as markdown: a changelog grouped by class (breaking, needs a decision, informational).

Everything a candidate (or a --registry file) can put into the report (its file name, METADATA, field names,
annotations, defaults, docs) goes through ``markdown``'s escapers: no newline, control character, ANSI escape or
backtick can leave its place in the line, so a file name cannot forge a heading such as ``## Accepted``."""
from __future__ import annotations

import json

from .markdown import md_code, md_prose, one_line

DOC_WIDTH = 240


def _code(text) -> str:
    return md_code(text) if text not in (None, "") else "—"


def _doc(text) -> str:
    text = text or ""
    return f'"{md_prose(text[:DOC_WIDTH])}…"' if len(text) > DOC_WIDTH else f'"{md_prose(text)}"'


def _headline(c) -> str:
    where = "" if c.config == "DistributedDataParallelConfig" else f" ({md_prose(c.config)})"
    name = f"{md_code(c.field)}{where}"
    if c.what == "added":
        return f"**added** {name}: {_code(c.new)}"
    if c.what == "removed":
        return f"**removed** {name} (was {_code(c.old)})"
    if c.what in ("default", "annotation"):
        return f"**{c.what} changed** {name}: {_code(c.old)} → {_code(c.new)}"
    if c.what in ("check", "coercion"):
        return f"**new __post_init__ {c.what}** of {name}: {md_prose(c.new)}"
    if c.what == "check-dropped":
        return f"**__post_init__ no longer uses** {name}"
    if c.what == "doc":
        return f"**doc changed** {name}: {_doc(c.old)} → {_doc(c.new)}"
    if c.what == "order":
        return f"**field order**: {md_prose(c.new) if c.old is None else 'relative order of existing fields changed'}"
    if c.what == "missing":
        return f"**not found**: {md_prose(c.config)} ({md_prose(c.old)})"
    return f"**{md_prose(c.what)}** {name}: {_code(c.old)} → {_code(c.new)}"


def _entry(c) -> list[str]:
    lines = [f"- {_headline(c)}"]
    lines += [f"  - {md_prose(note)}" for note in c.notes]
    lines.append(f"  - shim: {md_prose(c.shim)}")
    if c.proposal:
        known = " (already in renames.json)" if c.proposal["already_in_renames_json"] else ""
        lines.append(f"  - proposed renames.json entry{known}:")
        lines.append("    ```json")
        lines.append("    " + one_line(json.dumps(c.proposal["renames.json"], ensure_ascii=False)))
        lines.append("    ```")
    return lines


def markdown(report) -> str:
    from .diff import BREAKING, DECISION, INFO

    counts = {level: len(report.by_level(level)) for level in (BREAKING, DECISION, INFO)}
    facts = report.facts
    lines = [f"# Upgrade gate: megatron-core {md_prose(report.candidate)} vs registry {md_prose(report.against)}: "
             f"{report.verdict.upper()}", "",
             f"- candidate: {md_code(report.source)} ({report.kind}, Requires-Python "
             f"{md_prose(facts.get('requires_python') or '—')}, DDP config sha256 {facts['ddp']['sha256'][:12]})",
             f"- compared with: registry release {md_prose(report.against)}",
             f"- {counts[BREAKING]} breaking, {counts[DECISION]} needing a decision, {counts[INFO]} informational"
             f" (exit {report.exit_code})"]
    for title, level in (("Breaking", BREAKING), ("Needs a decision", DECISION), ("Informational", INFO)):
        lines += ["", f"## {title}", ""]
        changes = report.by_level(level)
        lines += [line for c in changes for line in _entry(c)] if changes else ["_none_"]
    from .ckpt import markdown_section

    lines += markdown_section(report)  # the checkpoint lane's verdict (issue 11)
    from .training import markdown_section as training_section

    lines += training_section(report)  # the equivalence lane's verdict (issue 18)
    if report.accepted:
        a = report.accepted
        lines += ["", "## Accepted", "", f"- {md_code(a['registry'])}: megatron-core {md_prose(a['version'])} "
                  f"{a.get('registry_action', 'added')}", f"- matrix.yaml: {md_prose(a['matrix'])}"]
    return "\n".join(lines)
