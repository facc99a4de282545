"""Score the surface gate's recall cases: breaks fixed in downstream projects' history
(``tests/data/surface_recall_cases/*.json``, format in its README.md), each scored at the commit before its fix and
at the fix, on the release it names, by scan + check as ``compat gate --project`` does; and the hash-ranked draw of
unguarded findings for hand review. Used by ``benchmarks/surface_generalisation.py`` and the unit tests.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.cache import model_for
from compat.tooling.gate.surface.project import scan_project
from compat.tooling.gate.surface.release_gate import candidate_path, check_model
from tools.git_snapshots import export, git_dir

ROOT = Path(__file__).resolve().parents[1]
# Breaks fixed in the projects' history, one JSON list per set (benchmarks/surface_recall_cases/README.md); the
# evaluation file is mined blind by another hand and may be absent.
CASES_DIR = ROOT / "tests" / "data" / "surface_recall_cases"
SHAPES = ("import", "attribute", "call", "override")  # counted in recall; "other" is listed, not counted
NOT_RUN = "NOT RUN"  # the case's snapshot or commit is missing here: listed, not counted
VISIBLE = "all four, in the candidate's wheel"  # recall row: cases whose symbol's package the candidate ships
NEAR = 2  # lines between the case's line and a finding's that still count as the same place
# The hand-review draw ranks each project's unguarded findings by a hash of the finding's key, so a finding that
# joins or leaves a pool moves no other one in or out (seeded draws reshuffled whenever a pool changed). Rounds take
# the next-ranked finding of every project: up to SAMPLE_PER_PROJECT each, then on past it until the set holds
# SAMPLE_MIN (at least 60 per set).
SAMPLE_PER_PROJECT = 8
SAMPLE_MIN = 60


def key(item: dict) -> tuple:
    return (item["project"], item["path"], item["line"], item["name"], item["kind"])


def rank(item: dict) -> str:
    return hashlib.sha256("|".join(map(str, key(item))).encode()).hexdigest()


def sample(unguarded: dict) -> list:
    """Round-robin over the projects in hash-rank order: SAMPLE_PER_PROJECT each, then more until SAMPLE_MIN."""
    pools: dict = {}
    for item in sorted(unguarded.values(), key=rank):
        pools.setdefault(item["project"], []).append(item)
    taken: list = []
    for depth in range(max(map(len, pools.values()), default=0)):
        if depth >= SAMPLE_PER_PROJECT and len(taken) >= SAMPLE_MIN:
            break
        taken += [pool[depth] for pool in pools.values() if depth < len(pool)]
    return sorted(taken, key=lambda item: (item["project"], rank(item)))


def load_cases(set_name: str) -> list:
    path = CASES_DIR / f"{set_name}.json"
    return json.loads(path.read_text()) if path.exists() else []


def wanted_part(symbol: str) -> str:
    """What a finding's name must contain: the keyword of ``f(kw=)``, else the last dotted component."""
    keyword = re.search(r"\((\w+)=\)", symbol)
    if keyword:
        return keyword.group(1)
    return symbol.split("(")[0].rstrip(".").split(".")[-1]


def names_case(finding, symbol: str) -> bool:
    """The finding is about the case's symbol: it names its part, or it is the missing module that holds it."""
    return wanted_part(symbol) in finding.name or (finding.kind == c.MISSING_MODULE
                                                   and symbol.startswith(finding.name + "."))


def statement_span(source: str, line: int) -> tuple[int, int]:
    """The lines of the innermost statement holding ``line`` (a compound statement: its header only), so a case
    written at a call's first line and a finding at its keyword's line (or the reverse) are the same place."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return line, line
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            body = getattr(node, "body", None)
            end = body[0].lineno - 1 if isinstance(body, list) and body and body[0].lineno > node.lineno \
                else node.end_lineno or node.lineno
            if node.lineno <= line <= end and (best is None or end - node.lineno <= best[1] - best[0]):
                best = (node.lineno, end)
    return best or (line, line)


def at_case(finding, case: dict, line: int | None, span: tuple[int, int] | None = None) -> bool:
    if finding.path != case["path"] or finding.kind not in c.BREAKING or not names_case(finding, case["symbol"]):
        return False
    if line is None:
        return True
    low, high = span or (line, line)
    lines = [finding.line, *(getattr(finding, "also_at", None) or [])]
    return any(isinstance(n, int) and low - NEAR <= n <= high + NEAR for n in lines)


class Gate:
    """Exports, scans and candidate models, each made once per (repo, rev) or release for all the cases."""

    def __init__(self, mirror: Path, tmp: Path, releases: dict):
        self.mirror, self.tmp, self.releases = mirror, tmp, releases
        self.scans: dict = {}
        self.models: dict = {}
        self.reports: dict = {}
        self.roots: dict = {}

    def scan(self, repo: str, rev: str):
        if (repo, rev) not in self.scans:
            dest = self.tmp / f"recall-{repo.replace('/', '+')}-{len(self.scans)}"
            sha = export(git_dir(self.mirror, repo), rev, dest)
            self.scans[(repo, rev)] = (sha, scan_project(dest))
            self.roots[(repo, rev)] = dest
        return self.scans[(repo, rev)]

    def span(self, repo: str, rev: str, path: str, line: int) -> tuple[int, int]:
        self.scan(repo, rev)
        try:
            return statement_span((self.roots[(repo, rev)] / path).read_text(errors="replace"), line)
        except OSError:
            return line, line

    def changed(self, repo: str, fix: str) -> dict:
        """Lines of ``fix^`` that ``fix`` removed or rewrote, per path (pure insertions name no old line)."""
        diff = subprocess.run(["git", "-C", str(git_dir(self.mirror, repo)), "diff", "-U0", "--no-renames",
                               f"{fix}^", fix, "--", "*.py"], capture_output=True, text=True, check=True,
                              errors="replace").stdout
        lines: dict = {}
        path = None
        for row in diff.splitlines():
            if row.startswith("--- "):
                path = row[6:] if row.startswith("--- a/") else None
            hunk = re.match(r"@@ -(\d+)(?:,(\d+))? ", row)
            if hunk and path:
                start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
                lines.setdefault(path, set()).update(range(start, start + count))
        return lines

    def ships(self, version: str, symbol: str) -> bool:
        """The candidate's wheel holds the package of ``symbol`` (``megatron.training`` first ships in 0.17.0): a
        break in a package the artifact lacks is not one the gate can see (the same test as check.NOT_SHIPPED)."""
        if version not in self.models:
            self.models[version] = model_for(candidate_path(version))
        parts = symbol.split("(")[0].split(".")
        if parts[0] != "megatron" or len(parts) < 2:
            return True  # a short name (``SelfAttention.forward``): the case's package is not named, so not decided
        return ".".join(parts[:2]) in self.models[version]["modules"]

    def findings(self, repo: str, rev: str, version: str) -> tuple[str, list]:
        if (repo, rev, version) not in self.reports:
            sha, scan = self.scan(repo, rev)
            if version not in self.models:
                self.models[version] = model_for(candidate_path(version))
            report = check_model(scan, self.models[version], version, releases=self.releases)
            self.reports[(repo, rev, version)] = (sha, report.findings)
        return self.reports[(repo, rev, version)]


def score_case(case: dict, gate: Gate) -> dict:
    """FOUND / FOUND-GUARDED / MISSED at the commit before the fix; at the fix whether the finding is gone."""
    row = {k: case.get(k) for k in ("id", "repo", "fix", "candidate", "path", "line", "shape", "symbol", "source",
                                    "meant_to_see")}
    try:
        sha, before = gate.findings(case["repo"], f"{case['fix']}^", case["candidate"])
        _, after = gate.findings(case["repo"], case["fix"], case["candidate"])
    except (subprocess.CalledProcessError, SystemExit) as exc:
        return {**row, "verdict": NOT_RUN, "why": str(exc).splitlines()[0], "hits": [], "at_fix": NOT_RUN}
    row["visible"] = gate.ships(case["candidate"], case["symbol"])
    line = case.get("line")
    span = gate.span(case["repo"], f"{case['fix']}^", case["path"], line) if isinstance(line, int) else None
    hits = [f for f in before if at_case(f, case, line, span)]
    row["before_commit"] = sha
    row["hits"] = [{"path": f.path, "line": f.line, "name": f.name, "kind": f.kind, "guarded": f.guarded} for f in hits]
    row["verdict"] = ("FOUND" if any(not f.guarded for f in hits) else "FOUND-GUARDED" if hits else "MISSED")
    if row["verdict"] == "MISSED":
        elsewhere = [f for f in before if at_case(f, case, None)]
        row["why"] = (f"named at line {elsewhere[0].line}, not within {NEAR} of {case.get('line')}" if elsewhere
                      else "no finding of that name at that path")
    # Second rule, reported beside the first: a finding of the symbol's name on a statement the fix rewrote, in any
    # file of the fix. An override is reported at the def whose signature misfits, which is where projects fix it,
    # while a case may name the call or a base class's def.
    changed = gate.changed(case["repo"], case["fix"])
    on_fix = [f for f in before if f.kind in c.BREAKING and names_case(f, case["symbol"]) and f.path in changed
              and _rewrote(changed[f.path], gate.span(case["repo"], f"{case['fix']}^", f.path, f.line))]
    row["fix_lines"] = ("FOUND" if any(not f.guarded for f in hits + on_fix) else
                        "FOUND-GUARDED" if hits or on_fix else "MISSED")
    row["fix_line_hits"] = [{"path": f.path, "line": f.line, "name": f.name, "kind": f.kind, "guarded": f.guarded}
                            for f in on_fix if f not in hits]
    # at the fix the file may have moved lines: any finding of the same name in the same file still counts
    left = [f for f in after if at_case(f, case, None)]
    row["at_fix"] = ("gone" if not left else "guarded" if all(f.guarded for f in left)
                     else "still unguarded at " + ", ".join(f"{f.path}:{f.line}" for f in left))
    return row


def _rewrote(lines: set, span: tuple[int, int]) -> bool:
    """The fix rewrote a line of the statement spanning ``span`` (first and last line)."""
    return any(span[0] <= n <= span[1] for n in lines)


def run_cases(set_name: str, gate: Gate) -> list:
    rows = []
    for case in load_cases(set_name):
        rows.append(score_case(case, gate))
        print(f"recall {set_name} {case['id']}: {rows[-1]['verdict']}", file=sys.stderr)
    return rows


def recall_by_shape(rows: list) -> dict:
    """Counts per shape of the cases that ran (a case whose snapshot or commit is missing is listed, not counted)."""
    rows = [r for r in rows if r["verdict"] != NOT_RUN]
    counted = [r for r in rows if r.get("shape") in SHAPES and r.get("meant_to_see", True)]
    visible = [r for r in counted if r.get("visible", True)]
    groups = [*((shape, [r for r in rows if r.get("shape") == shape]) for shape in (*SHAPES, "other")),
              ("all four", counted), (VISIBLE, visible)]
    return {name: {"cases": len(mine), "found": sum(r["verdict"] == "FOUND" for r in mine),
                   "guarded": sum(r["verdict"] == "FOUND-GUARDED" for r in mine),
                   "found_fix_lines": sum(r.get("fix_lines") == "FOUND" for r in mine)} for name, mine in groups}


