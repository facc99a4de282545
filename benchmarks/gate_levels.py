"""How the gate's levels moved: the classifier before (a checkout of main, run with --json) and after
(this tree) on real release pairs, split into a development set (the pairs the issue's review studied and this work
was tuned on) and an evaluation set (adjacent pins nobody looked at while writing it).

For every item the old classifier called breaking and the new one does not, the reason is checked mechanically:
a widened annotation must admit every old value (levels.annotation_fit), a demoted check must need a new
default-off field set (its when-clause). Writes benchmarks/results/gate_levels.json.

    python -m benchmarks.gate_levels --before CHECKOUT
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from compat.tooling import refresh  # noqa: E402
from compat.tooling.gate.levels import WIDENED, annotation_fit  # noqa: E402

DEVELOPMENT = [("0.19.2", "0.16.1"), ("0.19.2", "0.18.2")]
EVALUATION = [("0.14.0", "0.13.1"), ("0.15.3", "0.14.0"), ("0.16.1", "0.15.3"), ("0.17.1", "0.16.1"),
              ("0.18.2", "0.17.1"), ("0.13.1", "0.12.3"), ("0.12.3", "0.11.0"), ("0.11.0", "0.10.0")]
OUT = ROOT / "benchmarks" / "results" / "gate_levels.json"


def run(tree: Path, candidate: str, against: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-m", "compat", "gate", str(refresh.download(candidate)), "--against",
                           against, "--json"], cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 1):
        sys.exit(f"{tree}: gate {candidate} --against {against} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return json.loads(proc.stdout)


def key(c: dict) -> tuple:
    return c["config"], c["what"], c["field"]


def demotion_reason(c: dict, new: dict) -> str:
    if c["what"] == "annotation":
        return "widened (every old value fits)" if annotation_fit(c["old"], c["new"]).verdict == WIDENED else \
            "annotation not understood"
    if c["what"] == "check":
        notes = " ".join(new.get("notes", []))
        return "check needs a new default-off field set" if "fires only when" in notes else "check: other"
    return f"{c['what']}: other"


def pair(before: Path, candidate: str, against: str) -> dict:
    old, new = run(before, candidate, against), run(ROOT, candidate, against)
    old_breaking = {key(c): c for c in old["changes"]["breaking"]}
    new_all = {key(c): (level, c) for level, cs in new["changes"].items() for c in cs}
    demoted, items = collections.Counter(), []
    for k, c in old_breaking.items():
        level, now = new_all.get(k, (None, {}))
        if level != "breaking":
            reason = demotion_reason(c, now)
            demoted[reason] += 1
            items.append({"config": c["config"], "what": c["what"], "field": c["field"], "old": c["old"],
                          "new": c["new"], "now": level, "reason": reason})
    fresh = [c for c in new["changes"]["breaking"] if key(c) not in old_breaking]
    added = collections.Counter(c["what"] for c in fresh)
    return {"candidate": candidate, "against": against,
            "before": {lvl: len(cs) for lvl, cs in old["changes"].items()},
            "after": {lvl: len(cs) for lvl, cs in new["changes"].items()},
            "demoted_from_breaking": dict(demoted), "new_breaking_by_kind": dict(added), "demoted": items,
            "new_breaking": [{k: c[k] for k in ("config", "what", "field", "old", "new")} for c in fresh]}


def totals(rows: list[dict]) -> dict:
    out = {"pairs": len(rows), "breaking_before": sum(r["before"]["breaking"] for r in rows),
           "breaking_after": sum(r["after"]["breaking"] for r in rows)}
    for field in ("demoted_from_breaking", "new_breaking_by_kind"):
        acc = collections.Counter()
        for r in rows:
            acc.update(r[field])
        out[field] = dict(acc)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True, help="a checkout of the classifier before (main)")
    args = ap.parse_args()
    result = {"before": str(args.before), "load_before": [round(x, 2) for x in os.getloadavg()]}
    for name, pairs in (("development", DEVELOPMENT), ("evaluation", EVALUATION)):
        rows = [pair(args.before, c, a) for c, a in pairs]
        result[name] = {"pairs": rows, "totals": totals(rows)}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    for name in ("development", "evaluation"):
        print(name, json.dumps(result[name]["totals"]))


if __name__ == "__main__":
    main()
