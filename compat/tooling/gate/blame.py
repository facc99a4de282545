# SPDX-License-Identifier: Apache-2.0
"""For a Megatron-LM git checkout candidate: the commit that introduced each change (the last commit touching the
field's line, as ``git blame`` / ``git log -L`` see it). Read with git only; nothing in the tree is run.

One ``git blame --porcelain`` per file with one ``-L n,n`` per changed field. Without git, outside a work tree, or
when git fails, changes carry no commit and the report says why.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ...configs import CONFIGS, path_of_class

GIT_TIMEOUT_S = 120
_HEADER = re.compile(r"^([0-9a-f]{40}) \d+ (\d+)")
_FIELD_WHATS = ("added", "default", "annotation", "doc", "value rename")
# The candidate's .git/config is untrusted: nothing it names may run (fsmonitor hook, textconv or diff drivers).
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "diff.external=",
         "-c", "core.pager=cat")


def _git(tree: Path, *args: str) -> subprocess.CompletedProcess | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        return subprocess.run([git, "-C", str(tree), *_SAFE, *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
                              check=False, env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
                                                "PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired):
        return None


def is_checkout(tree: Path) -> bool:
    done = _git(tree, "rev-parse", "--is-inside-work-tree") if tree.is_dir() else None
    return bool(done and done.returncode == 0 and done.stdout.strip() == "true")


def field_lines(text: str, names: set[str]) -> dict[str, int]:
    """1-based line of each field's declaration (``    name: ...``), first occurrence."""
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^\s+([A-Za-z_][A-Za-z0-9_]*)\s*:", line)
        if m and m.group(1) in names and m.group(1) not in out:
            out[m.group(1)] = i
    return out


def blame_lines(tree: Path, path: str, lines: list[int]) -> dict[int, dict]:
    """line -> {"commit", "summary", "date"} for each line, from one porcelain blame."""
    if not lines:
        return {}
    args = ["blame", "--porcelain", "--no-textconv"]
    for n in sorted(set(lines)):
        args += ["-L", f"{n},{n}"]
    done = _git(tree, *args, "--", path)
    if done is None or done.returncode != 0:
        return {}
    out, info, current = {}, {}, None
    for row in done.stdout.splitlines():
        m = _HEADER.match(row)
        if m:
            current = m.group(1)
            out[int(m.group(2))] = current
            info.setdefault(current, {"commit": current})
        elif current and row.startswith("summary "):
            info[current]["summary"] = row[len("summary "):]
        elif current and row.startswith("author-time "):
            info[current]["time"] = int(row.split()[1])
    return {line: info[commit] for line, commit in out.items()}


def _shown(found: dict) -> str:
    return f"{found['commit'][:12]} {found.get('summary', '')}".strip()


def _check_lines(report) -> dict[str, list]:
    """path -> [(line, change)] for each new-check change: the first candidate check that reads its field."""
    keys = {c.class_name: c.key for c in CONFIGS.values()}
    out: dict[str, list] = {}
    for change in report.changes:
        key = keys.get(change.config)
        if change.what != "check" or key not in report.facts:
            continue
        post = report.facts[key].get("post_init", {})
        for check in post.get("checks", ()):
            if change.field in check.get("reads", ()) and isinstance(check.get("line"), int):
                path = path_of_class(check.get("owner", ""), CONFIGS[key].path)
                out.setdefault(path, []).append((check["line"], change))
                break
    return out


def attach_commits(report, tree: Path) -> str | None:
    """Set ``commit`` on each field change of a checkout candidate; the reason when none could be attached."""
    if not is_checkout(tree):
        return None
    head = _git(tree, "rev-parse", "HEAD")
    by_path: dict[str, dict[str, list]] = {}
    paths = {c.class_name: c.path for c in CONFIGS.values()}
    for change in report.changes:
        path = paths.get(change.config)
        if path and change.what in _FIELD_WHATS:
            by_path.setdefault(path, {}).setdefault(change.field, []).append(change)
    checks = _check_lines(report)
    for path, fields in by_path.items():
        try:
            text = (tree / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines = field_lines(text, set(fields))
        blamed = blame_lines(tree, path, list(lines.values()))
        for name, line in lines.items():
            if blamed.get(line):
                for change in fields[name]:
                    change.commit = _shown(blamed[line])
    for path, wanted in checks.items():  # a new check: the commit of the check's own line
        blamed = blame_lines(tree, path, [line for line, _ in wanted])
        for line, change in wanted:
            if blamed.get(line) and change.commit is None:
                change.commit = _shown(blamed[line])
    report.sections["checkout"] = {"head": head.stdout.strip() if head and head.returncode == 0 else None}
    return None
