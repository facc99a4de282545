"""How many ``__post_init__`` checks of TransformerConfig and MLATransformerConfig the registry pre-checks, per
release, and why the others are skipped (the one reason ``fields --json`` gives).

A check counts as pre-checked when the registry does not mark it ``skip``. A pre-checked check may still be
evaluated as "unknown" for one config (a value it reads is an expression, or a write before it may set that value):
those are counted per config by ``benchmarks/megatron_labels.py``, not here. With ``--rev REV`` the registry of
that git revision is counted as well (the figures before a change), from ``git show REV:compat/data/registry.json``.

Usage: ``python -m benchmarks.precheck_coverage [--rev REV] [--out benchmarks/results/precheck_coverage]``
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections import Counter
from pathlib import Path

from compat import version as v
from compat.registry import load_json
from compat.tooling.fsutil import atomic_write_text

CONFIGS = ("transformer", "mla")
FIRST = "0.13.0"  # the releases the figure is about: 0.13.0 and newer (the goal is on 0.16.1-0.19.2)


def _reason(skip: str) -> str:
    """A skip reason with its variable part folded: 'reads X, which ...' and 'uses the name X' by kind."""
    skip = re.sub(r"^reads \w+, which __post_init__ may set before it$", "reads a field __post_init__ may set before it",
                  skip)
    skip = re.sub(r"^uses the attribute [A-Z]\w*\.\w+$", "uses an attribute of a class (an Enum member)", skip)
    skip = re.sub(r"^uses the attribute \w+\.\w+$", "uses an attribute of a module (F.gelu)", skip)
    skip = re.sub(r"^uses the name \w+$", "uses a local or module name", skip)
    return skip


def count(data: dict) -> dict:
    """Release -> config -> {checks, prechecked, reasons}, counted from raw registry data (format 2 or 3)."""
    out = {}
    for release in data["releases"]:
        if not v.at_least(release["version"], FIRST):
            continue
        for config in CONFIGS:
            key = release["configs"].get(config)
            if key is None:
                continue
            refs = data["snapshots"][key]["checks"]
            skips = [data["checks"][ref[0]].get("skip") for ref in refs]
            reasons = Counter(_reason(s) for s in skips if s)
            out.setdefault(release["version"], {})[config] = {
                "checks": len(skips), "prechecked": sum(1 for s in skips if s is None),
                "reasons": dict(reasons.most_common())}
    return out


def _markdown(now: dict, before: dict | None, rev: str | None) -> str:
    lines = ["# Pre-checked `__post_init__` checks (TransformerConfig, MLATransformerConfig)", "",
             "Made by `python -m benchmarks.precheck_coverage" + (f" --rev {rev}" if rev else "") + "` from the committed "
             "registry. A check is pre-checked when the registry does not mark it `skip`; writes of `__post_init__` "
             "before it are replayed (`compat.precheck.Timeline`).", "",
             "| release | config | checks | pre-checked now | " + (f"before ({rev}) | " if before else "") + "|",
             "|---|---|---|---|" + ("---|" if before else "") + "|"]
    for version in v.sorted_versions(now):
        for config, row in now[version].items():
            cells = [version, config, str(row["checks"]), f"{row['prechecked']} ({100 * row['prechecked'] / row['checks']:.0f} %)"]
            if before:
                old = before.get(version, {}).get(config)
                cells.append(f"{old['prechecked']} ({100 * old['prechecked'] / old['checks']:.0f} %)" if old else "-")
            lines.append("| " + " | ".join(cells) + " | |")
    total = Counter()
    for version in now:
        if v.at_least(version, "0.16.1"):
            for row in now[version].values():
                total.update(row["reasons"])
    lines += ["", "Why the others are skipped, summed over 0.16.1-0.19.2 and both classes:", ""]
    lines += [f"- {n} x {reason}" for reason, n in total.most_common()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="also count the registry of this git revision (before a change)")
    parser.add_argument("--out", default=str(Path("benchmarks/results/precheck_coverage")),
                        help="writes OUT.json and OUT.md")
    args = parser.parse_args(argv)
    now = count(load_json("registry.json"))
    before = None
    if args.rev:
        raw = subprocess.run(["git", "show", f"{args.rev}:compat/data/registry.json"], check=True,
                             capture_output=True, text=True).stdout
        before = count(json.loads(raw))
    out = Path(args.out)
    atomic_write_text(out.with_suffix(".json"), json.dumps({"now": now, "before": before, "rev": args.rev},
                                                             indent=1, sort_keys=True) + "\n")
    atomic_write_text(out.with_suffix(".md"), _markdown(now, before, args.rev))
    print(out.with_suffix(".md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
