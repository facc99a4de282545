"""Surface gate on real projects: recall on breaks they fixed after a megatron-core bump, findings per release,
and the hand-checked false-alarm share of a sample of unguarded findings.

Needs the fetched snapshots (git directories) of the projects and of NVIDIA/Megatron-LM, laid out as
``MIRROR/<owner>+<name>/repo`` (what the session's ``fetch`` tool writes; a ``git clone --bare`` works too). Nothing
of the projects is copied into this repository: their Python files are exported to a temporary directory.

    python -m benchmarks.surface_study [--mirror DIR] [--out benchmarks/results]

Writes ``surface_study.json`` (under ``--out``) and ``docs/studies/surface-gate-on-real-projects.md``.
The verdicts of the hand review live in
``benchmarks/surface_review.json`` (one per sampled finding: ``true`` when the candidate wheel really lacks what the
project uses and the code can run, ``false`` otherwise, with the reason).
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
STUDY_DOC = ROOT / "docs" / "studies" / "surface-gate-on-real-projects.md"

from compat.tooling.gate.surface import check as c  # noqa: E402
from compat.tooling.gate.surface.cache import model_for, release_models  # noqa: E402
from compat.tooling.gate.surface.lookup import Surface  # noqa: E402
from compat.tooling.gate.surface.project import scan_project  # noqa: E402
from compat.tooling.gate.surface.release_gate import candidate_path, check_model  # noqa: E402
from tools.git_snapshots import add_mirror_option, export, git_dir, mirror_root  # noqa: E402

MEGATRON_LM = "NVIDIA/Megatron-LM"

# Breaks the projects fixed after a bump. ``expect``: the finding the gate must report, unguarded, at the commit
# before the fix (in ``paths``); at the fix commit the same finding must be gone or guarded there.
CASES = [
    {"id": "custom_fsdp", "repo": "ISEEKYAN/mbridge", "fix": "246d3d6", "candidate": "0.14.0",
     "expect": (c.MISSING_MODULE, "megatron.core.distributed.custom_fsdp"), "paths": ["mbridge/core/util.py"],
     "source": "mbridge 246d3d6 'fix custom_fsdp import path' (the break of slime PR #226)"},
    {"id": "encoder_and_decoder", "repo": "ISEEKYAN/mbridge", "fix": "7813c84", "candidate": "0.17.0",
     "expect": (c.MISSING_MEMBER, "megatron.core.models.gpt.gpt_model.ModelType.encoder_and_decoder"),
     "paths": ["mbridge/core/util.py", "example/qwen3vl/load_model_and_forward.py"],
     "source": "mbridge 7813c84 'support latest megatron that removes ModelType.encoder_and_decoder' (mbridge #155)"},
    {"id": "total_tokens", "repo": "modelscope/ms-swift", "fix": "abfe0c447", "candidate": "0.16.1",
     "expect": (c.UNEXPECTED_KEYWORD, "megatron.core.packed_seq_params.PackedSeqParams(total_tokens=)"),
     "paths": ["swift/megatron/utils/utils.py"],
     "source": "ms-swift PR #9960 'support PackedSeqParams without total_tokens' (floor direction)"},
    {"id": "encoder_parallel_sizes", "repo": "THUDM/slime", "fix": "f3b0ec5d1", "candidate": "0.14.0",
     "expect": (c.UNEXPECTED_KEYWORD,
                "megatron.core.mpu.initialize_model_parallel(encoder_tensor_model_parallel_size=)"),
     "paths": ["slime/backends/megatron_utils/initialize.py"],
     "source": "slime f3b0ec5d1 '[megatron] compatibility fix' (encoder_* sizes dropped from initialize_model_parallel)"},
    {"id": "optimizer_positional", "repo": "THUDM/slime", "fix": "b4399e8c4", "candidate": "0.16.0",
     "expect": (c.GIVEN_TWICE, "megatron.core.optimizer.get_megatron_optimizer(use_gloo_process_groups=)"),
     "paths": ["slime/backends/megatron_utils/model.py"],
     "source": "slime PR #1149 'minor fix for megatron compatibility' (config_overrides took lr_mult's place)"},
    {"id": "optimizer_kwargs", "repo": "volcengine/verl", "fix": "7ca9d8a06", "candidate": "0.16.0",
     "expect": (c.UNEXPECTED_KEYWORD, "megatron.core.optimizer.get_megatron_optimizer(no_weight_decay_cond=)"),
     "paths": ["verl/utils/megatron/optimizer.py"],
     "source": "verl PR #4396 'Remove Deprecated Megatron Optimizer Args'"},
    {"id": "is_hybrid_cp", "repo": "NVIDIA-NeMo/Megatron-Bridge", "fix": "92deeef43",
     "candidate": {"megatron_lm": "4c63602607966297f7daef31a2d6a9bd2dc50f65"},
     "expect": (c.MISSING_REQUIRED, "megatron.core.utils.get_batch_on_this_cp_rank(is_hybrid_cp=)"),
     "paths": ["src/megatron/bridge/training/gpt_step.py", "src/megatron/bridge/utils/common_utils.py"],
     "source": "Megatron-Bridge PR #3944 'Adapt MCore main bump compatibility' (MCore main 4c63602)"},
    {"id": "te_cuda_graph_pg_collection", "repo": "NVIDIA-NeMo/Megatron-Bridge", "fix": "2813ef478",
     "candidate": {"megatron_lm": "7ff046b1c8b976ff33761976796c4302ebd0a7bc"},
     "expect": (c.UNEXPECTED_KEYWORD, "megatron.core.transformer.cuda_graphs.TECudaGraphHelper(pg_collection=)"),
     "paths": ["src/megatron/bridge/training/train.py"],
     "source": "Megatron-Bridge PR #3417 'guard pg_collection kwarg for mcore dev' (MCore dev 7ff046b, its .dev.commit)"},
    {"id": "encoder_and_decoder_verl", "repo": "volcengine/verl", "fix": None, "before": "b178a3cd5",
     "candidate": "0.17.0",
     "expect": (c.MISSING_MEMBER, "megatron.core.enums.ModelType.encoder_and_decoder"),
     "paths": ["verl/utils/megatron_utils.py"],
     "source": "verl PR #6927 (fix not in the snapshot; b178a3cd5 of 2026-01-29 predates it)"},
]

# Breaks of another shape: Megatron calls the project's code (a model provider, a subclass's forward or __init__)
# with a new keyword. The gate checks calls the project makes into megatron, not calls megatron makes into it.
MISSES = [
    {"id": "model_provider_vp_stage", "repo": "THUDM/slime", "fix": "a952d2ff0",
     "source": "slime a952d2ff0 'fix vpp interface breaking change in mcore0.13': get_model passes vp_stage "
               "to the project's model_provider"},
    {"id": "forward_rotary_pos_cos_sin", "repo": "volcengine/verl", "fix": "3399d39b5",
     "source": "verl PR #4291: Megatron passes rotary_pos_cos_sin to a subclass's forward()"},
    {"id": "attention_name_kwarg", "repo": "NVIDIA-NeMo/Megatron-Bridge", "fix": "92deeef43",
     "source": "Megatron-Bridge PR #3944 (second half): MCore passes name= to DiTSelfAttention.__init__"},
    {"id": "model_provider_pg_collection", "repo": "THUDM/slime", "fix": None,
     "source": "slime PR #1500: get_model passes config/pg_collection to the model provider (not in the snapshot)"},
]

PROJECTS = {"slime": ("THUDM/slime", "624b824a8"), "ms-swift": ("modelscope/ms-swift", "3602360a5"),
            "ROLL": ("alibaba/ROLL", "8eb27cc2"), "verl": ("volcengine/verl", "b178a3cd5"),
            "Megatron-Bridge": ("NVIDIA-NeMo/Megatron-Bridge", "067f987df"), "mbridge": ("ISEEKYAN/mbridge", "10cb17f59")}
SWEEP = ["0.13.1", "0.15.3", "0.17.1", "0.19.2"]
SAMPLE_PER_PROJECT = 8
SEED = 9


def candidate_model(spec, mirror: Path, tmp: Path) -> tuple[dict, str]:
    if isinstance(spec, dict):
        tree = tmp / f"megatron-lm-{spec['megatron_lm'][:9]}"
        if not tree.exists():
            export(git_dir(mirror, MEGATRON_LM), spec["megatron_lm"], tree, "megatron")
        return model_for(tree), f"Megatron-LM {spec['megatron_lm'][:9]}"
    return model_for(candidate_path(spec)), spec


def gate_dir(project: Path, model: dict, label: str, releases: dict):
    return check_model(scan_project(project), model, label, releases=releases)


def matching(report, expect, paths) -> list:
    kind, name = expect
    return [f for f in report.findings if f.kind == kind and f.name == name and f.path in paths]


def run_cases(mirror: Path, tmp: Path, releases: dict) -> list:
    out = []
    for case in CASES:
        gitdir = git_dir(mirror, case["repo"])
        model, label = candidate_model(case["candidate"], mirror, tmp)
        before_rev = case.get("before") or f"{case['fix']}^"
        row = {"id": case["id"], "repo": case["repo"], "candidate": label, "source": case["source"],
               "expect": {"kind": case["expect"][0], "name": case["expect"][1]}}
        before = tmp / f"{case['id']}-before"
        row["before_commit"] = export(gitdir, before_rev, before)
        hits = matching(gate_dir(before, model, label, releases), case["expect"], case["paths"])
        row["before"] = [{"path": f.path, "line": f.line, "guarded": f.guarded, "instead": f.instead} for f in hits]
        row["found"] = any(not f.guarded for f in hits)
        if case["fix"]:
            after = tmp / f"{case['id']}-after"
            row["fix_commit"] = export(gitdir, case["fix"], after)
            left = matching(gate_dir(after, model, label, releases), case["expect"], case["paths"])
            row["after"] = [{"path": f.path, "line": f.line, "guarded": f.guarded, "guard": f.guard} for f in left]
            row["cleared_by_fix"] = all(f.guarded for f in left)
        out.append(row)
        print(f"recall {case['id']}: found={row['found']} cleared={row.get('cleared_by_fix')}", file=sys.stderr)
    return out


def run_sweep(mirror: Path, tmp: Path, releases: dict) -> tuple[list, dict]:
    rows, unguarded = [], {}
    for name, (repo, rev) in PROJECTS.items():
        dest = tmp / f"project-{name}"
        sha = export(git_dir(mirror, repo), rev, dest)
        scan = scan_project(dest)
        for version in SWEEP:
            started = time.perf_counter()
            report = check_model(scan, model_for(candidate_path(version)), version, releases=releases)
            summary = {"project": name, "commit": sha, "release": version, "files": scan.files,
                       "megatron_files": scan.megatron_files, "uses": len(scan.uses),
                       "check_s": round(time.perf_counter() - started, 2)}
            for f in report.findings:
                if f.breaks:
                    key = (name, f.path, f.line, f.name, f.kind)
                    unguarded.setdefault(key, {"project": name, "path": f.path, "line": f.line, "name": f.name,
                                               "kind": f.kind, "releases": [], "instead": f.instead})
                    unguarded[key]["releases"].append(version)
            counts = {k: 0 for k in ("breaking", "guarded", "deprecated", "not_shipped")}
            for f in report.findings:
                counts["breaking"] += f.breaks
                counts["guarded"] += f.kind in c.BREAKING and f.guarded
                counts["deprecated"] += f.kind == c.DEPRECATED
                counts["not_shipped"] += f.kind == c.NOT_SHIPPED
            rows.append({**summary, **counts})
        print(f"sweep {name}: {scan.files} files, {len(scan.uses)} uses", file=sys.stderr)
    return rows, unguarded


def draw_sample(unguarded: dict) -> list:
    rng = random.Random(SEED)
    sample = []
    for project in PROJECTS:
        pool = sorted((v for v in unguarded.values() if v["project"] == project),
                      key=lambda v: (v["path"], v["line"], v["name"]))
        sample += rng.sample(pool, min(SAMPLE_PER_PROJECT, len(pool)))
    return sample


def review(sample: list, verdicts_path: Path) -> dict:
    verdicts = {}
    if verdicts_path.exists():
        for v in json.loads(verdicts_path.read_text()):
            verdicts[(v["project"], v["path"], v["line"], v["name"], v["kind"])] = v
    rows, counts = [], {"true": 0, "false": 0, "unreviewed": 0}
    names_false = 0
    for item in sample:
        v = verdicts.get((item["project"], item["path"], item["line"], item["name"], item["kind"]))
        verdict = v["verdict"] if v else "unreviewed"
        counts[verdict] += 1
        if verdict == "false" and v.get("cause") == "name or keyword":
            names_false += 1
        rows.append({**item, "verdict": verdict, "why": v.get("why", "") if v else ""})
    reviewed = counts["true"] + counts["false"]
    return {"sample": rows, "counts": counts, "false_alarm_share": round(counts["false"] / reviewed, 3) if reviewed
            else None, "false_alarms_from_name_or_keyword_resolution": names_false}


def kept_summary() -> list[str]:
    """The study document's hand-written summary paragraph, kept when the document is rewritten."""
    text = STUDY_DOC.read_text(encoding="utf-8") if STUDY_DOC.exists() else ""
    summary = next((block for block in text.split("\n\n") if block.startswith("**Summary.**")), None)
    return [summary, ""] if summary else []


def markdown(result: dict) -> str:
    lines = ["# Surface gate on real projects", "", *kept_summary(),
             f"Measured {result['date']} (load average {result['loadavg']}); reproduce with "
             "`python -m benchmarks.surface_study` from the fetched snapshots.", "",
             "## Recall: breaks projects fixed after a megatron-core bump", "",
             "| case | project | candidate | expected finding | before the fix | at the fix |", "|---|---|---|---|---|---|"]
    for r in result["recall"]:
        where = ", ".join(f"{b['path']}:{b['line']}" + (" (guarded)" if b["guarded"] else "") for b in r["before"])
        after = "; ".join(f"{a['path']}:{a['line']} " + (f"guarded by {a['guard']}" if a["guarded"]
                                                          else "STILL UNGUARDED (the fix missed it)")
                          for a in r.get("after", [])) or "gone"
        after = after if "after" in r else "no fix commit in the snapshot"
        lines.append(f"| {r['id']} | {r['repo']} `{r['before_commit'][:9]}` | {r['candidate']} | "
                     f"{r['expect']['kind']} `{r['expect']['name']}` | {'FOUND' if r['found'] else 'missed'}: "
                     f"{where or '—'} | {after} |")
    found = sum(r["found"] for r in result["recall"])
    cleared = sum(bool(r.get("cleared_by_fix")) for r in result["recall"])
    with_fix = sum("after" in r for r in result["recall"])
    lines += ["", f"Found {found} of {len(result['recall'])} call/import/attribute-shaped breaks at the commit before "
              f"the fix. At the fix commit the finding is gone or guarded in {cleared} of {with_fix}; where it is "
              "not, the gate points at a use the fix left behind.", "",
              "Not seen by design (Megatron calls the project's code with a new keyword):", ""]
    lines += [f"- {m['id']}: {m['source']}" for m in result["misses"]]
    lines += ["", f"Recall over all {found + len(result['misses'])} listed breaks: {found}/"
              f"{len(result['recall']) + len(result['misses'])}.", "",
              "## Findings per project and release", "",
              "| project | commit | release | files | use megatron | uses | unguarded | guarded | deprecated | "
              "not shipped | check s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["sweep"]:
        lines.append(f"| {r['project']} | `{r['commit'][:9]}` | {r['release']} | {r['files']} | "
                     f"{r['megatron_files']} | {r['uses']} | {r['breaking']} | {r['guarded']} | {r['deprecated']} | "
                     f"{r['not_shipped']} | {r['check_s']} |")
    rv = result["review"]
    lines += ["", "## Hand review of unguarded findings", "",
              f"{len(rv['sample'])} findings sampled ({SAMPLE_PER_PROJECT} per project, seed {SEED}) from "
              f"{result['unguarded_unique']} unique unguarded findings; each checked against the wheel's source and "
              f"the project's code. True {rv['counts']['true']}, false {rv['counts']['false']}, unreviewed "
              f"{rv['counts']['unreviewed']}: false-alarm share {rv['false_alarm_share']}, "
              f"{rv['false_alarms_from_name_or_keyword_resolution']} of them from name or keyword resolution.", "",
              "| project | where | finding | releases | verdict | why |", "|---|---|---|---|---|---|"]
    for s in rv["sample"]:
        lines.append(f"| {s['project']} | `{s['path']}:{s['line']}` | {s['kind']} `{s['name']}` | "
                     f"{', '.join(s['releases'])} | {s['verdict']} | {s['why']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_mirror_option(parser)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--review", type=Path, default=ROOT / "benchmarks" / "surface_review.json")
    args = parser.parse_args()
    for version in SWEEP + [case["candidate"] for case in CASES if isinstance(case["candidate"], str)]:
        candidate_path(version)  # into the wheel cache
    releases = {v: Surface(m) for v, m in release_models().items()}
    with tempfile.TemporaryDirectory(prefix="surface-study-") as tmp:
        tmp = Path(tmp)
        recall = run_cases(mirror_root(args.mirror), tmp, releases)
        sweep, unguarded = run_sweep(mirror_root(args.mirror), tmp, releases)
    sample = draw_sample(unguarded)
    result = {"date": time.strftime("%Y-%m-%d"), "loadavg": open("/proc/loadavg").read().split()[:3],
              "history_releases": list(releases), "recall": recall, "misses": MISSES, "sweep": sweep,
              "unguarded_unique": len(unguarded), "review": review(sample, args.review)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "surface_study.json").write_text(json.dumps(result, indent=1) + "\n")
    STUDY_DOC.write_text(markdown(result))
    print(f"wrote {STUDY_DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
