"""Counts of the Megatron-LM unit-test labels and of the argparse-built launch-script configs on one pin: run
with a pin session's python (torch + megatron-core).

Per tag: cases, cases whose class this pin has, how the real class judged them, and how compat judged the ones
the real class accepts (accepted / documented refusal / false refusal, from the registry and on the live class),
plus the cases compat accepts that the real class refuses (passed on to Megatron's own checks; not a fault).
Per launch-script set (dev, eval), where the wheel ships megatron.training: scripts, refused by Megatron's own
parser / validate_args, built, and the verdicts of the real class and of compat on the kwargs.

Usage: ``.nox/mcore-0-16-1/bin/python -m benchmarks.megatron_labels [--out benchmarks/results/megatron_labels]``
writes ``<out>/<version>.json``; ``benchmarks/megatron_labels_report.py`` merges them into the .md and .json.
"""
from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from compat import version as v
from tools.siblings import load_file

ROOT = Path(__file__).resolve().parents[1]
# tests/contract's cases (label_cases imports live_helpers by bare name, as pytest's rootdir mode lets it)
AC = load_file(ROOT / "tests" / "contract" / "argparse_cases.py")
LC = load_file(ROOT / "tests" / "contract" / "label_cases.py")

# A refusal of the real class that names a package this CPU host lacks: the same config passes where it is installed
ENVIRONMENT = re.compile(r"TransformerEngine|Transformer Engine|\bTE\b|[Aa]pex|is not available|not installed")


def measure() -> dict:
    installed = v.installed_version()
    per_tag = {tag: Counter() for tag in LC.LABELS["tags"]}
    false_refusals, refusal_kinds = [], Counter()
    for case in LC.cases_for(installed):
        c = per_tag[case["tag"]]
        c["cases_with_class"] += 1
        try:
            kwargs = LC.decode_kwargs(case["kwargs"])
        except LookupError:
            c["enum_member_absent"] += 1
            continue
        real = LC.real_outcome(LC.real_class(case["config"]), kwargs)
        c["real_accepts" if real is None else "real_refuses"] += 1
        outcomes = LC.compat_outcomes(case["config"], kwargs, installed)
        if real is not None:
            refused = any(e is not None for e in outcomes.values())
            c["compat_refuses_too" if refused else "compat_passes_on"] += 1
            if not refused and ENVIRONMENT.search(str(real)):
                c["compat_passes_on_environment"] += 1  # the real class refuses what this host lacks (TE, Apex)
            continue
        for path, error in outcomes.items():
            if error is None:
                c[f"{path}_accepts"] += 1
            elif (row := LC.documented(error)) is not None:
                c[f"{path}_documented_refusal"] += 1
                refusal_kinds[row["kind"]] += 1
            else:
                c[f"{path}_false_refusal"] += 1
                false_refusals.append({"tag": case["tag"], "file": case["file"], "line": case["line"], "path": path,
                                       "error": f"{type(error).__name__}: {error}"[:300]})
    return {"version": installed, "tags": {t: dict(sorted(c.items())) for t, c in per_tag.items()},
            "documented_refusals": dict(refusal_kinds), "false_refusals": false_refusals,
            "launch_scripts": measure_launch_scripts(installed) if AC.has_training() else None}


def measure_launch_scripts(installed: str) -> dict:
    out = {}
    for split in ("dev", "eval"):
        c, refusals = Counter(), []
        for script in (s for s in AC.LAUNCH["scripts"] if s["set"] == split):
            c["scripts"] += 1
            try:
                config, kwargs = AC.config_kwargs_from_args(script["args"])
            except (Exception, SystemExit):
                c["megatron_parser_refuses"] += 1
                continue
            c["built"] += 1
            real = LC.real_outcome(LC.real_class(config), kwargs)
            c["real_accepts" if real is None else "real_refuses"] += 1
            for path, error in LC.compat_outcomes(config, kwargs, installed).items():
                if error is None:
                    c[f"{path}_accepts"] += 1
                    continue
                kind = "false_refusal" if real is None and LC.documented(error) is None else \
                    "refusal_real_also_refuses" if real is not None else "documented_refusal"
                c[f"{path}_{kind}"] += 1
                refusals.append({"file": script["file"], "path": path, "kind": kind, "real": real,
                                 "error": f"{type(error).__name__}: {error}"[:300]})
        out[split] = {"projects": sorted({s["project"] for s in AC.LAUNCH["scripts"] if s["set"] == split}),
                      "counts": dict(sorted(c.items())), "refusals": refusals}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "megatron_labels")
    args = ap.parse_args(argv)
    data = measure()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{data['version']}.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    for tag, c in data["tags"].items():
        print(tag, c)
    for f in data["false_refusals"][:30]:
        print("FALSE REFUSAL", f)
    print(f"{len(data['false_refusals'])} false refusals on {data['version']}")
    for split, row in (data["launch_scripts"] or {}).items():
        print("launch scripts", split, row["counts"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
