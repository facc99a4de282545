"""Check recall cases against the fetched snapshots: git and the standard library only.

    python -m tools.check_recall_cases [--mirror DIR] [FILE ...]   # DIR defaults to $MCORE_COMPAT_MIRROR

For each case: the fields and shape are well formed, ``fix`` resolves in ``MIRROR/<owner>+<name>/repo``, ``path``
exists at ``fix^``, and line ``line`` of that file at ``fix^`` contains the symbol's last component (or the name the
file imports it as: ``import X as Y``). Exit 1 with one line per problem, else 0.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from tools.git_snapshots import mirror_root

CASES_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "surface_recall_cases"
FIELDS = {"id": str, "repo": str, "fix": str, "candidate": str, "path": str, "line": int, "shape": str,
          "symbol": str, "meant_to_see": bool, "source": str}
SHAPES = {"import", "attribute", "call", "override", "other"}
SHA = re.compile(r"[0-9a-f]{9,40}")
RELEASE = re.compile(r"\d+\.\d+\.\d+")


def last_component(symbol: str) -> str:
    """``a.b.C.m(kw=)`` -> ``m``; ``a.b.f(kw=)->provider`` -> ``provider`` (a callback the project passes)."""
    tail = symbol.rsplit("->", 1)[-1]
    return tail.split("(", 1)[0].rsplit(".", 1)[-1]


def git_dir(mirror: Path, repo: str) -> Path:
    folder = mirror / repo.replace("/", "+")
    return folder / "repo" if (folder / "repo").is_dir() else folder


def git(gdir: Path, *args: str) -> str | None:
    done = subprocess.run(["git", "--git-dir", str(gdir), *args], capture_output=True, text=True, errors="replace")
    return done.stdout if done.returncode == 0 else None


def form_problems(case: dict) -> list[str]:
    problems = [f"field {name!r} missing or not {kind.__name__}" for name, kind in FIELDS.items()
                if not isinstance(case.get(name), kind)]
    if problems:
        return problems
    if case["shape"] not in SHAPES:
        problems.append(f"shape {case['shape']!r} not one of {sorted(SHAPES)}")
    if case["meant_to_see"] != (case["shape"] != "other"):
        problems.append("meant_to_see must be false for shape 'other' and true otherwise")
    if not SHA.fullmatch(case["fix"]):
        problems.append(f"fix {case['fix']!r} is not a 9 to 40 digit hex sha")
    if not RELEASE.fullmatch(case["candidate"]):
        problems.append(f"candidate {case['candidate']!r} is not a release number")
    if case["line"] < 1:
        problems.append("line must be >= 1")
    return problems


def history_problems(case: dict, mirror: Path) -> list[str]:
    gdir = git_dir(mirror, case["repo"])
    if not gdir.is_dir():
        return [f"no snapshot of {case['repo']} under {mirror}"]
    if git(gdir, "rev-parse", "--verify", "--quiet", f"{case['fix']}^{{commit}}") is None:
        return [f"fix {case['fix']} does not resolve in {gdir}"]
    text = git(gdir, "show", f"{case['fix']}^:{case['path']}")
    if text is None:
        return [f"{case['path']} does not exist at {case['fix']}^"]
    lines = text.splitlines()
    if case["line"] > len(lines):
        return [f"{case['path']} has {len(lines)} lines at {case['fix']}^, not {case['line']}"]
    name = last_component(case["symbol"])
    spellings = {name} | set(re.findall(rf"\b{re.escape(name)}\s+as\s+(\w+)", text))
    if not any(spelling in lines[case["line"] - 1] for spelling in spellings):
        return [f"line {case['line']} of {case['path']} at {case['fix']}^ does not contain {name!r}"
                + (f" or its alias {sorted(spellings - {name})}" if len(spellings) > 1 else "")]
    return []


def check(cases: list, mirror: Path) -> list[str]:
    problems = []
    seen: set[str] = set()
    for number, case in enumerate(cases):
        label = case.get("id", f"#{number}") if isinstance(case, dict) else f"#{number}"
        if not isinstance(case, dict):
            problems.append(f"{label}: not an object")
            continue
        if case.get("id") in seen:
            problems.append(f"{label}: duplicate id")
        seen.add(case.get("id"))
        found = form_problems(case)
        found = found or history_problems(case, mirror)
        problems += [f"{label}: {p}" for p in found]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=None, help="snapshot mirror (default: $MCORE_COMPAT_MIRROR)")
    parser.add_argument("files", nargs="*", type=Path, default=[CASES_DIR / "evaluation.json"])
    args = parser.parse_args(argv)
    mirror = mirror_root(args.mirror)
    problems = []
    total = 0
    for path in args.files:
        cases = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(cases, list):
            problems.append(f"{path}: not a JSON list")
            continue
        total += len(cases)
        problems += [f"{path.name}: {p}" for p in check(cases, mirror)]
    for line in problems:
        print(line)
    print(f"{total} cases, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
