"""Surface gate on downstream projects no earlier study used (issue 15): recall on breaks fixed in their history
and a hand-checked false-alarm share of unguarded findings, for a development and an evaluation set kept apart.

The split was written into ``benchmarks/results/surface_study.md`` before the gate's code changed; the evaluation
set was run only after the last change to ``compat/tooling/gate/surface/``. Snapshots come from the ``fetch`` tool
(``MIRROR/<owner>+<name>/repo``); nothing of the projects is copied here.

    python benchmarks/surface_generalisation.py [--mirror /work/.mirror] [--set development|evaluation|both]

Writes ``benchmarks/results/surface_generalisation.json`` and the section between the markers in
``benchmarks/results/surface_study.md``. Hand verdicts: ``benchmarks/results/surface_generalisation_labels.json``.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from surface_study import export, git_dir  # noqa: E402

from compat.tooling.gate.surface import check as c  # noqa: E402
from compat.tooling.gate.surface.cache import model_for, release_models  # noqa: E402
from compat.tooling.gate.surface.release_gate import candidate_path, check_model  # noqa: E402
from compat.tooling.gate.surface.lookup import Surface  # noqa: E402
from compat.tooling.gate.surface.project import scan_project  # noqa: E402

SETS = {
    "development": {"NeMo-RL": ("NVIDIA-NeMo/RL", "7ea279abf"),
                    "Pai-Megatron-Patch": ("alibaba/Pai-Megatron-Patch", "a098ca5"),
                    "ChatLearn": ("alibaba/ChatLearn", "b7af31a9")},
    "evaluation": {"AReaL": ("inclusionAI/AReaL", "4aef98d8d"),
                   "NeMo-Aligner": ("NVIDIA/NeMo-Aligner", "af2b3bd9"),
                   "TensorRT-Model-Optimizer": ("NVIDIA/TensorRT-Model-Optimizer", "5a4242fa"),
                   # added 17:59 UTC, after the three above gave 5 unguarded findings in all; not looked at before
                   "NeMo": ("NVIDIA/NeMo", "8cfedd7203"),
                   "Export-Deploy": ("NVIDIA-NeMo/Export-Deploy", "914daa6b2")},
}
# Releases each project is gated against: the pin it declares (AReaL: 0.17.0) and the newest release; projects
# without a megatron-core pin (they follow Megatron-LM main or a submodule) against three recent releases.
RELEASES = {"AReaL": ["0.17.0", "0.19.2"]}
DEFAULT_RELEASES = ["0.15.3", "0.17.1", "0.19.2"]
# Breaks fixed in the projects' history: the finding the gate must report unguarded at the commit before the fix.
# Found by matching names the cached releases removed against the lines each commit removed, then read by hand;
# TensorRT-Model-Optimizer b39c73dd is listed for its shape the gate does not see (a method of an instance).
CASES: dict[str, list] = {
    "development": [
        {"id": "tensor_and_expert_rank", "repo": "alibaba/ChatLearn", "fix": "7709ea9c", "candidate": "0.10.0",
         "expect": ("missing name", "megatron.core.mpu.get_tensor_and_expert_parallel_rank"),
         "source": "ChatLearn 7709ea9c 'fix attr error ...': mpu.get_tensor_and_expert_parallel_rank dropped"},
    ],
    "evaluation": [
        {"id": "optimizer_kwargs_areal", "repo": "inclusionAI/AReaL", "fix": "bf9b3c3be", "candidate": "0.16.0",
         "expect": ("unexpected keyword", "megatron.core.optimizer.get_megatron_optimizer(no_weight_decay_cond=)"),
         "source": "AReaL bf9b3c3be (megatron-core 0.13.1 -> 0.16.0): get_megatron_optimizer lost its *_cond kwargs"},
        {"id": "inference_wrapper_prep", "repo": "NVIDIA/TensorRT-Model-Optimizer", "fix": "b39c73dd",
         "candidate": "0.14.0", "expect": None,
         "source": "TensorRT-Model-Optimizer b39c73dd 'Fix ... for Mcore 0.14+': wrapped_model.prep_model_for_inference"
                   "(prompt_tokens) on an instance (not seen: calls on instances are not tracked)"},
    ],
}
SAMPLE_PER_PROJECT = 12
SEED = 15
LABELS = ROOT / "benchmarks" / "results" / "surface_generalisation_labels.json"
BEGIN, END = "<!-- generalisation:begin -->", "<!-- generalisation:end -->"


def key(item: dict) -> tuple:
    return (item["project"], item["path"], item["line"], item["name"], item["kind"])


def sweep(name: str, repo: str, rev: str, mirror: Path, tmp: Path, releases: dict) -> tuple[dict, dict]:
    dest = tmp / name
    sha = export(git_dir(mirror, repo), rev, dest)
    started = time.perf_counter()
    scan = scan_project(dest)
    row = {"project": name, "commit": sha, "files": scan.files, "megatron_files": scan.megatron_files,
           "uses": len(scan.uses), "scan_s": round(time.perf_counter() - started, 2), "releases": {}}
    unguarded: dict = {}
    for version in RELEASES.get(name, DEFAULT_RELEASES):
        report = check_model(scan, model_for(candidate_path(version)), version, releases=releases)
        row["releases"][version] = {"unguarded": sum(f.breaks for f in report.findings),
                                    "guarded": sum(f.kind in c.BREAKING and f.guarded for f in report.findings),
                                    "override": sum(f.kind == c.OVERRIDE for f in report.findings)}
        for f in report.findings:
            if f.breaks:
                item = {"project": name, "path": f.path, "line": f.line, "name": f.name, "kind": f.kind,
                        "instead": f.instead}
                unguarded.setdefault(key(item), {**item, "releases": []})["releases"].append(version)
    return row, unguarded


def sample(unguarded: dict, project: str) -> list:
    pool = sorted((v for v in unguarded.values() if v["project"] == project), key=key)
    return random.Random(SEED).sample(pool, min(SAMPLE_PER_PROJECT, len(pool)))


def run_cases(set_name: str, mirror: Path, tmp: Path, releases: dict) -> list:
    rows = []
    for case in CASES[set_name]:
        gitdir = git_dir(mirror, case["repo"])
        model = model_for(candidate_path(case["candidate"]))
        row = {k: case[k] for k in ("id", "repo", "fix", "candidate", "source")}
        for when, rev in (("before", f"{case['fix']}^"), ("after", case["fix"])):
            dest = tmp / f"case-{case['id']}-{when}"
            export(gitdir, rev, dest)
            report = check_model(scan_project(dest), model, case["candidate"], releases=releases)
            hits = [f for f in report.findings if case["expect"] and (f.kind, f.name) == tuple(case["expect"])]
            row[when] = [{"path": f.path, "line": f.line, "guarded": f.guarded} for f in hits]
        row["found"] = any(not h["guarded"] for h in row["before"])
        row["cleared_by_fix"] = all(h["guarded"] for h in row["after"])
        rows.append(row)
    return rows


def reviewed(items: list, labels: dict) -> dict:
    counts = {"true": 0, "false": 0, "unreviewed": 0}
    for item in items:
        label = labels.get("|".join(map(str, key(item))))
        item["verdict"] = label["verdict"] if label else "unreviewed"
        item["why"] = label.get("why", "") if label else ""
        counts[item["verdict"]] += 1
    done = counts["true"] + counts["false"]
    return {"counts": counts, "false_alarm_share": round(counts["false"] / done, 3) if done else None}


def markdown(result: dict) -> str:
    lines = [BEGIN, "", f"### Results (measured {result['date']}, load average {result['loadavg']})", ""]
    for set_name, data in result["sets"].items():
        rv = data["review"]
        lines += [f"#### {set_name} set", "",
                  "| project | commit | files | use megatron | uses | scan s | release: unguarded / guarded / override |",
                  "|---|---|---|---|---|---|---|"]
        for row in data["sweep"]:
            per = "; ".join(f"{v}: {r['unguarded']} / {r['guarded']} / {r['override']}"
                            for v, r in row["releases"].items())
            lines.append(f"| {row['project']} | `{row['commit'][:9]}` | {row['files']} | {row['megatron_files']} | "
                         f"{row['uses']} | {row['scan_s']} | {per} |")
        cases = data.get("recall", [])
        lines += ["", f"Recall: {sum(r['found'] for r in cases)} of {len(cases)} breaks fixed in these projects' "
                  "history found unguarded at the commit before the fix.", "",
                  "| case | fix | candidate | before the fix | at the fix |", "|---|---|---|---|---|"]
        for r in cases:
            before = ", ".join(f"{h['path']}:{h['line']}" for h in r["before"]) or "not seen"
            after = ", ".join(f"{h['path']}:{h['line']}" + (" guarded" if h["guarded"] else "") for h in r["after"])
            lines.append(f"| {r['id']}: {r['source']} | `{r['fix']}` | {r['candidate']} | "
                         f"{'FOUND ' if r['found'] else 'missed '}{before} | {after or 'gone'} |")
        lines += ["", f"Hand review: {len(data['sample'])} unguarded findings sampled (up to {SAMPLE_PER_PROJECT} per "
                  f"project, seed {SEED}) of {data['unguarded_unique']} unique; true {rv['counts']['true']}, false "
                  f"{rv['counts']['false']}, unreviewed {rv['counts']['unreviewed']}: false-alarm share "
                  f"{rv['false_alarm_share']}.", "",
                  "| project | where | finding | releases | verdict | why |", "|---|---|---|---|---|---|"]
        for s in data["sample"]:
            lines.append(f"| {s['project']} | `{s['path']}:{s['line']}` | {s['kind']} `{s['name']}` | "
                         f"{', '.join(s['releases'])} | {s['verdict']} | {s['why']} |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--set", choices=["development", "evaluation", "both"], default="both")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--relabel", action="store_true",
                        help="only apply the hand labels to the stored samples and rewrite the markdown")
    args = parser.parse_args()
    labels = json.loads(LABELS.read_text()) if LABELS.exists() else {}
    releases = {v: Surface(m) for v, m in release_models().items()}
    out_json = args.out / "surface_generalisation.json"
    result = json.loads(out_json.read_text()) if out_json.exists() else {"sets": {}}
    chosen = [] if args.relabel else list(SETS) if args.set == "both" else [args.set]
    for set_name, data in result["sets"].items() if args.relabel else ():
        data["review"] = reviewed(data["sample"], labels)
        if "recall" not in data:
            with tempfile.TemporaryDirectory(prefix="surface-gen-") as tmp:
                data["recall"] = run_cases(set_name, args.mirror, Path(tmp), releases)
    with tempfile.TemporaryDirectory(prefix="surface-gen-") as tmp:
        for set_name in chosen:
            rows, items, unique = [], [], 0
            for name, (repo, rev) in SETS[set_name].items():
                row, unguarded = sweep(name, repo, rev, args.mirror, Path(tmp), releases)
                rows.append(row)
                unique += len(unguarded)
                items += sample(unguarded, name)
                print(f"{set_name} {name}: {row['uses']} uses, {len(unguarded)} unguarded", file=sys.stderr)
            result["sets"][set_name] = {"sweep": rows, "sample": items, "unguarded_unique": unique,
                                        "review": reviewed(items, labels),
                                        "recall": run_cases(set_name, args.mirror, Path(tmp), releases)}
    if chosen:
        result.update(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      loadavg=open("/proc/loadavg").read().split()[:3])
    result["sets"] = {k: result["sets"][k] for k in SETS if k in result["sets"]}
    out_json.write_text(json.dumps(result, indent=1) + "\n")
    md = args.out / "surface_study.md"
    text = md.read_text()
    section = markdown(result)
    if BEGIN in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        anchor = "## Recall: breaks projects fixed"
        text = text.replace(anchor, section + "\n\n" + anchor, 1)
    md.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
