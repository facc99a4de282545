# SPDX-License-Identifier: Apache-2.0
"""The gate report as markdown: a changelog grouped by class (breaking, needs a decision, informational).

Everything a candidate (or a --registry file) can put into the report (its file name, METADATA, field names,
annotations, defaults, docs) goes through ``markdown``'s escapers: no newline, control character, ANSI escape or
backtick can leave its place in the line, so a file name cannot forge a heading such as ``## Accepted``."""
from __future__ import annotations

import json

from ...errors import escape_controls
from ..text import bullet_section, md_code, md_prose

DOC_WIDTH = 240


def _code(text) -> str:
    return md_code(text) if text not in (None, "") else "—"


def _doc(text) -> str:
    text = text or ""
    return f'"{md_prose(text[:DOC_WIDTH])}…"' if len(text) > DOC_WIDTH else f'"{md_prose(text)}"'


# Kinds of change shown as "**label** name: old → new" (Change.what -> label); the others are spelled out below.
_CHANGED = {"default": "default changed", "annotation": "annotation changed", "value rename": "value renamed",
            "requires-python": "Requires-Python changed", "dependency added": "dependency added",
            "dependency removed": "dependency removed", "dependency bound": "dependency bound"}


def _headline(c) -> str:
    where = "" if c.config in ("DistributedDataParallelConfig", "(package)") else f" ({md_prose(c.config)})"
    name = f"{md_code(c.field)}{where}"
    if c.what in _CHANGED:
        tail = " (rewritten after construction)" if c.what == "value rename" else ""
        subject = "" if c.what == "requires-python" else f" {name}"
        return f"**{_CHANGED[c.what]}**{subject}: {_code(c.old)} → {_code(c.new)}{tail}"
    if c.what in ("added", "removed"):
        return f"**added** {name}: {_code(c.new)}" if c.what == "added" else \
            f"**removed** {name} (was {_code(c.old)})"
    if c.what in ("check", "coercion"):
        return f"**new `__post_init__` {c.what}** of {name}: {md_prose(c.new)}"
    if c.what == "check-dropped":
        return f"**`__post_init__` no longer uses** {name}"
    if c.what == "doc":
        return f"**doc changed** {name}: {_doc(c.old)} → {_doc(c.new)}"
    if c.what == "order":
        return f"**field order**: {md_prose(c.new) if c.old is None else 'relative order of existing fields changed'}"
    if c.what in ("missing", "new class", "label"):
        detail = c.old if c.what == "missing" else c.new
        heading = {"missing": "not found", "new class": "new class", "label": "version label"}[c.what]
        return f"**{heading}**: {md_prose(c.config if c.what != 'label' else c.old)} ({md_prose(detail)})"
    return f"**{md_prose(c.what)}** {name}: {_code(c.old)} → {_code(c.new)}"


def _entry(c) -> list[str]:
    lines = [f"- {_headline(c)}"]
    lines += [f"  - {md_prose(note)}" for note in c.notes]
    lines.append(f"  - shim: {md_prose(c.shim)}")
    if c.kwargs:
        lines.append(f"  - keep the old behaviour: {md_code(escape_controls(json.dumps(c.kwargs, ensure_ascii=False, default=str)))}")
    if c.commit:
        lines.append(f"  - upstream commit: {md_code(c.commit)}")
    if c.proposal:
        known = " (already in renames.json)" if c.proposal["already_in_renames_json"] else ""
        lines.append(f"  - proposed renames.json entry{known}:")
        lines.append("    ```json")
        lines.append("    " + escape_controls(json.dumps(c.proposal["renames.json"], ensure_ascii=False)))
        lines.append("    ```")
    return lines


def _top(report) -> list[str]:
    """What the reader must know before the changes: a label naming another release's config, a chosen baseline."""
    lines = []
    label = report.label
    if label and label["differs"] and label["claims"] != report.against:
        lines.append(f"- **this build says it is {md_prose(label['claims'])}, but its config differs from the "
                     f"registry's {md_prose(label['claims'])}** ({label['changes']} differences: "
                     f"{md_prose('; '.join(label['shown']))}{'; …' if label['changes'] > len(label['shown']) else ''})")
    elif label and label["differs"]:
        lines.append(f"- **this build says it is {md_prose(label['claims'])}, but its config differs from the "
                     f"registry's {md_prose(label['claims'])}**: every change below is a difference from that release")
    if report.baseline:
        lines.append(f"- {md_prose(report.baseline)}")
    return lines


def install_section(report) -> list[str]:
    """The plain install (``pip install megatron-core==X``) of the pin before the candidate (smoke sessions)."""
    rec = report.sections.get("install")
    if not rec:
        return []
    lines = [f"plain install of {md_code('megatron-core==' + rec['pin'])} (declared dependencies, no extras, torch "
             f"{md_prose(rec.get('torch') or '—')}, Python {md_prose(rec.get('python') or '—')}"
             + (f", with {md_prose(rec['override'])}" if rec.get("override") else "") + f"): "
             f"{md_prose(rec.get('install') or '—')}"]
    imports = rec.get("imports") or {}
    failing = {m: v for m, v in imports.items() if v != "ok"}
    if imports and not failing:
        lines.append(f"imports: all {len(imports)} modules the contract tests use import on CPU")
    lines += [f"{md_code(m)}: {md_prose(v)}" for m, v in sorted(failing.items())]
    if rec.get("undeclared"):
        after = {m: v for m, v in (rec.get("imports_with_undeclared") or {}).items() if v != "ok"}
        lines.append(f"imported but not declared: {', '.join(md_code(m) for m in rec['undeclared'])}"
                     + (f"; with them installed, still failing: {', '.join(md_code(m) for m in sorted(after))}"
                        if after else "; with them installed every module imports"))
    lines.append(f"recorded {md_prose(rec.get('measured') or '—')} by `nox -s smoke-{md_prose(rec['pin'])}`")
    return bullet_section("Install", lines)


def _ckpt_section(report) -> list[str]:
    from .ckpt import markdown_section

    return markdown_section(report)  # the checkpoint lane's verdict


def _training_section(report) -> list[str]:
    from .training import markdown_section

    return markdown_section(report)  # the equivalence lane's verdict


def _accepted_section(report) -> list[str]:
    if not report.accepted:
        return []
    a = report.accepted
    return ["", "## Accepted", "", f"- {md_code(a['registry'])}: megatron-core {md_prose(a['version'])} "
            f"{a.get('registry_action', 'added')}", f"- matrix.yaml: {md_prose(a['matrix'])}"]


# Sections after the changes, in order: each takes the report and returns its lines ([] when it has nothing to say).
# Add a section by inserting its function here.
def _companions_section(report) -> list[str]:
    from .companions.gate_section import markdown_section

    return markdown_section(report)


SECTIONS = [install_section, _companions_section, _ckpt_section, _training_section, _accepted_section]


def markdown(report) -> str:
    from .diff import BREAKING, DECISION, INFO

    counts = {level: len(report.by_level(level)) for level in (BREAKING, DECISION, INFO)}
    facts = report.facts
    meta = report.sections.get("metadata") or {}
    requires_python = facts.get("requires_python") or (meta.get("candidate") or {}).get("requires_python")
    lines = [f"# Upgrade gate: megatron-core {md_prose(report.candidate)} vs registry {md_prose(report.against)}: "
             f"{report.verdict.upper()}", "", *_top(report),
             f"- candidate: {md_code(report.source)} ({report.kind}, Requires-Python "
             f"{md_prose(requires_python or '—')}, DDP config sha256 {facts['ddp']['sha256'][:12]})",
             f"- compared with: registry release {md_prose(report.against)}",
             f"- {counts[BREAKING]} breaking, {counts[DECISION]} needing a decision, {counts[INFO]} informational"
             f" (exit {report.exit_code})"]
    if meta.get("not_compared"):
        lines.append(f"- package metadata not compared: {md_prose(meta['not_compared'])}")
    for title, level in (("Breaking", BREAKING), ("Needs a decision", DECISION), ("Informational", INFO)):
        lines += ["", f"## {title}", ""]
        changes = report.by_level(level)
        lines += [line for c in changes for line in _entry(c)] if changes else ["_none_"]
    for section in SECTIONS:
        lines += section(report)
    return "\n".join(lines)
