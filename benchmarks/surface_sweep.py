"""Unguarded findings of the surface gate on the development projects of the generalisation study, for a before/after comparison
of a change to the gate (the new findings are then read by hand).

    python -m benchmarks.surface_sweep --out findings.json [--mirror DIR] [--releases 0.16.1 0.19.2]
    python -m benchmarks.surface_sweep --diff before.json after.json   # the findings only one of them has

Run it from two checkouts (before and after the change) on the same snapshots; each uses the gate of its own tree.
Development projects only: the evaluation set is scored by the lead (surface_generalisation.py).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from benchmarks.surface_generalisation import SETS  # noqa: E402
from benchmarks.surface_study import PROJECTS  # noqa: E402
from compat.tooling.gate.surface.cache import model_for  # noqa: E402
from compat.tooling.gate.surface.project import scan_project  # noqa: E402
from compat.tooling.gate.surface.release_gate import candidate_path, check_model  # noqa: E402
from tools.git_snapshots import add_mirror_option, export, git_dir, mirror_root  # noqa: E402

DEVELOPMENT = {**SETS["development"], **PROJECTS}


def sweep(mirror: Path, releases: list[str]) -> list[dict]:
    models = {v: model_for(candidate_path(v)) for v in releases}
    rows = []
    with tempfile.TemporaryDirectory(prefix="surface-sweep-") as tmp:
        for name, (repo, rev) in DEVELOPMENT.items():
            dest = Path(tmp) / name
            export(git_dir(mirror, repo), rev, dest)
            scan = scan_project(dest, cache=False)
            for version, model in models.items():
                for f in check_model(scan, model, version).findings:
                    if f.breaks:
                        rows.append({"project": name, "release": version, "path": f.path, "line": f.line,
                                     "kind": f.kind, "name": f.name, "via": f._use.via if f._use else ""})
            print(f"{name}: {sum(r['project'] == name for r in rows)} unguarded", file=sys.stderr)
    return rows


def diff(before: list[dict], after: list[dict]) -> dict:
    def key(r):
        return r["project"], r["release"], r["path"], r["line"], r["kind"], r["name"]
    old, new = {key(r) for r in before}, {key(r) for r in after}
    return {"new": [r for r in after if key(r) not in old], "gone": [r for r in before if key(r) not in new]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_mirror_option(parser)
    parser.add_argument("--releases", nargs="+", default=["0.16.1", "0.19.2"])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.diff:
        print(json.dumps(diff(*(json.loads(p.read_text()) for p in args.diff)), indent=1))
        return 0
    rows = sweep(mirror_root(args.mirror), args.releases)
    text = json.dumps(rows, indent=1) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
