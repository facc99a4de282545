"""The companion window for every catalogued companion, scored against what each release says it was built for
(benchmarks/data/companion_truth.json, which the tool never reads). Writes benchmarks/results/companions.md and
companions.json.

    python -m benchmarks.companion_window [--last 12]      # downloads the companions' wheels the cache lacks

Scores per companion: *on the built-for pin* (the static verdict is ok on our pin of the series the release was
built for), *best fit* (the pin with the fewest unguarded breaks is in that series), and for a declared lower bound
the cells on each side of it. Recorded real installs (compat/tooling/data/companion_installs.json) are scored the
same way where they exist.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from compat.tooling.fsutil import atomic_write_text
from compat.tooling.gate.companions.catalog import companions
from compat.tooling.gate.companions.window import OK, companion_window

HERE = Path(__file__).resolve().parent
TRUTH = HERE / "data" / "companion_truth.json"
RESULTS = HERE / "results"


def series(version: str) -> str:
    return ".".join(version.split(".")[:2])


def score(result, truth: dict) -> dict:
    out: dict = {"split": truth.get("split", "no ground truth"), "rows": []}
    pins_of = {series(p): p for p in result.pins}
    clean = fit = real_ok = real_n = n = 0
    for release, fact in truth.get("releases", {}).items():
        if release not in result.releases or fact["built_for"] not in pins_of:
            continue
        pin = pins_of[fact["built_for"]]
        cell = result.cells[(release, pin)]
        best = result.best_fit(release)
        n += 1
        clean += cell.status == OK
        fit += bool(best) and series(best) == fact["built_for"]
        if cell.real:
            real_n += 1
            real_ok += cell.real["outcome"] == "ok"
        out["rows"].append({"release": release, "built_for": fact["built_for"], "pin": pin, "static": cell.status,
                            "breaking": cell.breaking, "best_fit": best,
                            "real": cell.real["outcome"] if cell.real else None, "evidence": fact["evidence"]})
    out.update(releases=n, ok_on_built_for=clean, best_fit_agrees=fit, real_checked=real_n, real_ok=real_ok)
    bounds = []
    for pin, minimum in truth.get("declared_min", {}).items():
        if pin not in result.pins:
            continue
        from compat import version as _v

        above = [r for r in result.releases if _v.at_least(r, minimum)]
        below = [r for r in result.releases if not _v.at_least(r, minimum)]
        bounds.append({"pin": pin, "min": minimum,
                       "at_or_above_ok": sum(result.cells[(r, pin)].status == OK for r in above),
                       "at_or_above": len(above),
                       "below_ok": sum(result.cells[(r, pin)].status == OK for r in below), "below": len(below)})
    out["declared_min"] = bounds
    out["static_vs_real"] = static_vs_real(result)
    return out


def static_vs_real(result) -> dict:
    """Every cell with a recorded install: the static verdict against what the install did. "static ok, install
    fails" is a break the surface gate missed; "static breaks, install ok" is mostly a break an import does not
    reach (a call with a removed keyword)."""
    table: dict = {}
    for cell in result.cells.values():
        if cell.real:
            key = f"static {cell.status}, install {cell.real['outcome']}"
            table[key] = table.get(key, 0) + 1
    return dict(sorted(table.items()))


def markdown(results: dict, scores: dict) -> str:
    lines = ["# Companion window: which companion releases go with which megatron-core", "",
             "How to reproduce: `python -m benchmarks.companion_window` (downloads the wheels; the window itself is "
             "`mcore-compat window --companion NAME`). Real installs: `nox -s companions-<pin> -- --record` "
             "(tools/companion_install.py). Ground truth, held apart: `benchmarks/data/companion_truth.json`.", ""]
    for name, result in results.items():
        s = scores[name]
        lines += [f"## {name} ({s['split']})", ""]
        if s["releases"]:
            lines.append(f"- static verdict ok on the built-for pin: {s['ok_on_built_for']} of {s['releases']} "
                         f"releases; best-fit pin in the built-for series: {s['best_fit_agrees']} of {s['releases']}")
            if s["real_checked"]:
                lines.append(f"- real installs on the built-for pin: {s['real_ok']} of {s['real_checked']} import "
                             "every megatron-using module (the others: see the real column)")
        for b in s["declared_min"]:
            lines.append(f"- megatron-core {b['pin']} declares {name}>={b['min']}: static ok for "
                         f"{b['at_or_above_ok']} of {b['at_or_above']} releases at or above it, and for "
                         f"{b['below_ok']} of {b['below']} below it (a declared minimum is not a break)")
        if s["static_vs_real"]:
            lines.append("- every cell with a recorded install, static verdict against the install: "
                         + "; ".join(f"{k}: {v}" for k, v in s["static_vs_real"].items()))
        if s["rows"]:
            lines += ["", "| release | built for | pin | static | unguarded breaks | best fit | real |",
                      "|---|---|---|---|---|---|---|"]
            lines += [f"| {r['release']} | {r['built_for']} | {r['pin']} | {r['static']} | {r['breaking']} | "
                      f"{r['best_fit']} | {r['real'] or '-'} |" for r in s["rows"]]
        lines += ["", result.to_markdown().replace("\n# ", "\n### ").split("\n", 1)[1], ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--last", type=int, default=12)
    args = parser.parse_args()
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    results = {name: companion_window(c, last=args.last) for name, c in companions().items()}
    scores = {name: score(result, truth.get(name, {})) for name, result in results.items()}
    atomic_write_text(RESULTS / "companions.json", json.dumps(
        {"scores": scores, "windows": {n: r.to_dict() for n, r in results.items()}}, indent=1) + "\n")
    atomic_write_text(RESULTS / "companions.md", markdown(results, scores))
    for name, s in scores.items():
        print(name, {k: v for k, v in s.items() if k not in ("rows",)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
