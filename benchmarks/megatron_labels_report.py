"""Merge the per-pin runs of ``benchmarks/megatron_labels.py`` (``results/megatron_labels/<version>.json``) into
``results/megatron_labels.json`` and ``.md``: per pin and tag (dev / eval), per launch-script set, the documented
refusals, and the same label run with the compat of main before this work (``before-<version>.json``)."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "benchmarks" / "results" / "megatron_labels"
OUT = ROOT / "benchmarks" / "results" / "megatron_labels"
LABELS = ROOT / "tests" / "contract" / "data" / "megatron_test_labels.json"
REFUSALS = ROOT / "tests" / "contract" / "data" / "documented_refusals.json"


def _key(version: str):
    return tuple(int(x) for x in version.split("."))


def _row(version: str, tag: str, split: str, c: dict) -> str:
    def both(kind):
        return f"{c.get('registry_' + kind, 0)} / {c.get('live_' + kind, 0)}"
    return (f"| {version} | {tag} ({split}) | {c.get('cases_with_class', 0)} | {c.get('real_accepts', 0)} | "
            f"{both('accepts')} | {both('documented_refusal')} | **{both('false_refusal')}** | "
            f"{c.get('real_refuses', 0)} ({c.get('compat_refuses_too', 0)} / {c.get('compat_passes_on', 0)}) | "
            f"{_config_determined(c)} |")


def _config_determined(c: dict) -> str:
    """Cases compat passes on that the real class refuses for the config itself, not for what this host lacks."""
    return str(c.get("compat_passes_on", 0) - c.get("compat_passes_on_environment", 0))


def main() -> int:
    labels = json.loads(LABELS.read_text())
    runs = {json.loads(p.read_text())["version"]: json.loads(p.read_text())
            for p in RUNS.glob("[0-9]*.json")}
    before = {p.stem.removeprefix("before-"): json.loads(p.read_text()) for p in RUNS.glob("before-*.json")}
    refusals = json.loads(REFUSALS.read_text())["refusals"]
    split = {t: c["set"] for t, c in labels["tags"].items()}
    lines = ["# Megatron-LM's own tests and argparse-built configs through compat",
             "",
             "Made by `python -m benchmarks.megatron_labels` (one run per pin, with the pin's venv python) and "
             "`python -m benchmarks.megatron_labels_report`. Labels: every config constructor call in Megatron-LM's "
             "`tests/unit_tests` whose kwargs evaluate statically (`benchmarks/megatron_test_labels.py`), at "
             + ", ".join(f"{t} ({c['set']}: {c['cases']} cases, {c['calls_skipped']} calls not evaluable)"
                         for t, c in labels["tags"].items())
             + ". The dev/eval split was fixed before any case was looked at. On each pin the real class builds "
               "each case whose class it has; compat judges the cases the real class accepts from the registry "
               "and on the live class (registry / live below; ModelParallelConfig cases have no live path).",
             "",
             "| pin | tag | cases | real class accepts | compat accepts (registry / live) | documented refusals | "
             "false refusals | real class refuses (compat refuses too / passes it on) | of those passed on: "
             "refused for the config (false acceptances; the rest name what this CPU host lacks: TE, Apex) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for version in sorted(runs, key=_key):
        for tag, c in runs[version]["tags"].items():
            lines.append(_row(version, tag, split[tag], c))
    for version, run in sorted(before.items()):
        for tag, c in run["tags"].items():
            lines.append(_row(f"{version}, {run.get('compat', 'before')}", tag, split[tag], c))
    lines += ["", "## Launch scripts through Megatron-LM's own parser",
              "",
              "On pins whose wheel ships `megatron.training` (0.17.0+): each script's bash-array arguments "
              "(`benchmarks/launch_args_harvest.py`) go through `add_megatron_arguments`, `validate_args` (GPU "
              "capability answered as Hopper 9.0) and `core_transformer_config_from_args`; the kwargs it passes "
              "to the config class go to the real class and through compat. On these CPU venvs the real class "
              "refuses most of them because Transformer Engine is absent (`apply_rope_fusion`, fused permutation).",
              "",
              "| pin | set (projects) | scripts | Megatron's parser refuses | built | real class accepts | "
              "compat accepts (registry / live) | compat refuses, real class too | false refusals |",
              "|---|---|---|---|---|---|---|---|---|"]
    rows = [(v, runs[v]) for v in sorted(runs, key=_key)] + [(f"{v}, {r.get('compat', 'before')}", r)
                                                             for v, r in sorted(before.items())]
    for version, run in rows:
        for name, row in (run.get("launch_scripts") or {}).items():
            c = row["counts"]
            lines.append(
                f"| {version} | {name} ({', '.join(row['projects'])}) | {c.get('scripts', 0)} | "
                f"{c.get('megatron_parser_refuses', 0)} | {c.get('built', 0)} | {c.get('real_accepts', 0)} | "
                f"{c.get('registry_accepts', 0)} / {c.get('live_accepts', 0)} | "
                f"{c.get('registry_refusal_real_also_refuses', 0)} / {c.get('live_refusal_real_also_refuses', 0)} | "
                f"**{c.get('registry_false_refusal', 0)} / {c.get('live_false_refusal', 0)}** |")
    lines += ["", "compat's refusals in these rows (\"real class too\" means for any reason; on CPU mostly the "
                  "absent Transformer Engine):", ""]
    for version, run in rows:
        for name, row in (run.get("launch_scripts") or {}).items():
            errors = {}
            for r in row["refusals"]:
                text = r["error"].split(" (", 1)[0][:110]
                errors[text] = errors.get(text, 0) + 1
            lines += [f"- {version} {name}: {n} x `{e}`" for e, n in sorted(errors.items(), key=lambda x: -x[1])]
    diff_file = RUNS / "real_configs_registry_diff.json"
    if diff_file.exists():
        diff = json.loads(diff_file.read_text())
        lines += ["", "## The real-configs study (registry run) before and after", "",
                  f"{diff['what']}: {diff['config_releases']} config-releases, {diff['changed']} changed "
                  f"({', '.join(f'{k}: {n}' for k, n in diff['outcome_changes'].items())}). Every change drops a "
                  "refusal of a value the release reads as meant (`moe_flex_dispatcher_backend=None` on 0.16+ now "
                  "resolves; `cuda_graph_modules=[]` on 0.7-0.17 is dropped as equal to its absence), after which "
                  "the config resolves or the next refusal (an unsupported field, an extracted `__post_init__` "
                  "check) shows; no refusal of a new kind appears. Most common:", ""]
        lines += [f"- {n} x {k}" for k, n in list(diff["changes"].items())[:8]]
    lines += ["", "## Documented refusals", "",
              "Values the real class accepts that compat refuses on purpose "
              "(`tests/contract/data/documented_refusals.json`):", ""]
    lines += [f"- **{r['kind']}** ({r['error']}, {r.get('rule') or r.get('field')}): {r['why']}" for r in refusals]
    false = [(v, f) for v, run in runs.items() for f in run["false_refusals"]]
    lines += ["", f"False refusals listed: {len(false)}."]
    lines += [f"- {v} {f['tag']} {f['file']}:{f['line']} ({f['path']}): {f['error']}" for v, f in false]
    (OUT.with_suffix(".md")).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (OUT.with_suffix(".json")).write_text(json.dumps(
        {"labels": labels["tags"], "pins": runs, "before": before, "documented_refusals": refusals}, indent=1)
        + "\n", encoding="utf-8")
    print(f"wrote {OUT.with_suffix('.md')} ({len(runs)} pins)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
