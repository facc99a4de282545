"""Checkpoint lane driver: save on megatron-core N-1, load on N, compare every optimizer byte.

    python tests/ckpt/lane.py pair --old 0.18.2 --new 0.19.2 --old-python P --new-python P [--backend gloo]
    python tests/ckpt/lane.py table          re-render benchmarks/results/ckpt_lane.md from the JSON

The checkout root must be on PYTHONPATH (the script imports tools/; the nox lane sessions set it):
``PYTHONPATH=. python tests/ckpt/lane.py ...`` from the root.

``pair`` runs worker.py's save side with the old pin's python and its load side with the new pin's python (each
in its own process group, killed whole on timeout; anything still alive in the group afterwards is a process
left behind), evaluates every variant with compare.py, holds the outcome against tests/ckpt/expected.yaml, and
merges the pair's row into ckpt_lane.{json,md} (atomically, under a lock): in benchmarks/results/ with
``--record``, otherwise in the ignored benchmarks/results/raw/ (tools/results.py). Exit 1 when
anything nobody expected happened, including an expected failure that no longer happens.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

import compare  # this folder's: first on sys.path when run, found by tools/siblings.py when loaded as a module

try:  # the checkout's tools/: the root on PYTHONPATH (the nox lane sessions set it)
    from tools.lane_common import add_launch_options, subcommand_parser, worker_env
    from tools.results import RECORDED, results_dir_for
except ModuleNotFoundError as exc:
    if exc.name != "tools":
        raise
    raise SystemExit(f"{__file__} imports the checkout's tools/: run it from the checkout root as "
                     f"`PYTHONPATH=. python tests/ckpt/lane.py ...`") from None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

EXPECTED = os.path.join(HERE, "expected.yaml")
RESULTS_DIR = str(RECORDED)  # the tracked results (tools/results.py owns the path)
MOMENTS = ("exp_avg", "exp_avg_sq")
VARIANT_ORDER = ("plain", "default", "dp_reshardable", "fully_reshardable", "dp_zero_gather_scatter",
                 "fully_sharded_model_space", "fully_sharded_bucket_space")


# --------------------------------------------------------------------------------------------- run a side
def run_side(python, side, workdir, *, backend, timeout, plan=None, torchrun=False,
             world_size=2) -> tuple[dict, dict]:
    """Run worker.py in its own process group; returns (its report, process facts). ``torchrun``: the ranks are
    launched by ``torchrun --standalone`` (env:// rendezvous) and the report is collected from their files after."""
    out = os.path.join(workdir, f"{side}.json")
    worker = os.path.join(HERE, "worker.py")
    common = [side, "--ckpt", os.path.join(workdir, "ckpt"), "--out", out, "--backend", backend, "--timeout",
              str(timeout), "--world-size", str(world_size)] + (["--plan", plan] if plan is not None else [])
    rank_dir = os.path.join(workdir, f"{side}-ranks")
    if torchrun:
        cmd = [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world_size}", worker,
               *common, "--rank-dir", rank_dir]
    else:
        cmd = [python, worker, *common]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, start_new_session=True, env=worker_env())
    facts = {"timed_out": False}
    try:
        proc.wait(timeout + 60)  # the launcher enforces `timeout` on its ranks; this catches the launcher
    except subprocess.TimeoutExpired:
        facts["timed_out"] = True
        _kill_group(proc.pid)
        proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    facts.update(exit_code=proc.returncode, wall_s=round(time.monotonic() - t0, 2),
                 cpu_s=round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2))
    facts["group_left_behind"] = _group_leftovers(proc.pid)
    if torchrun:
        subprocess.run([python, worker, *common, "--collect", rank_dir], check=False, timeout=120, env=worker_env())
    report = {}
    if os.path.exists(out):
        with open(out, encoding="utf-8") as fh:
            report = json.load(fh)
    return report, facts


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _group_leftovers(pgid: int) -> list[str]:
    """Anything of the side's process group still alive after its launcher exited (then killed)."""
    for _ in range(40):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        time.sleep(0.25)
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(pid)) == pgid:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
                    found.append(f"{pid}: {cmdline[:160]}")
    _kill_group(pgid)
    return found


# ------------------------------------------------------------------------------------------------ evaluate
def _ranks_of(report: dict, variant: str) -> list[dict]:
    return [r.get("variants", {}).get(variant, {}) for r in report.get("ranks", [])]


def _first_error(recs: list[dict]) -> dict | None:
    return next((r for r in recs if r.get("error")), None)


def _merged(recs: list[dict], key: str) -> tuple[dict, list]:
    return compare.merge([r[key] for r in recs])


def short_message(text: str, workdir: str = "") -> str:
    """The first line of an error, without the run's temp paths or addresses (so results are reproducible)."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    if workdir:
        line = line.replace(workdir, "<ckpt>")
    line = re.sub(re.escape(tempfile.gettempdir()) + r"/[\w./-]+", "<tmp>", line)
    line = re.sub(r"0x[0-9a-fA-F]+", "0x…", line)
    return line[:300]


def evaluate(variant: str, save: dict, load: dict, workdir: str = "") -> dict:
    """One variant's verdict: exact, error (side, stage, message) or loss (what differs), plus the checks."""
    saved_recs, load_recs = _ranks_of(save, variant), _ranks_of(load, variant)
    if not saved_recs or any(not r for r in saved_recs):
        return {"result": "error", "side": "save", "stage": "not run",
                "message": "the save side did not reach this variant (an earlier one broke its ranks)"}
    err = _first_error(saved_recs)
    if err:
        return {"result": "error", "side": "save", "stage": err["stage"],
                "message": short_message(err["error"], workdir), "where": err.get("where")}
    err = _first_error(load_recs)
    if err:
        return {"result": "error", "side": "load", "stage": err["stage"],
                "message": short_message(err["error"], workdir), "where": err.get("where")}
    if not load_recs or any("loaded" not in r for r in load_recs):
        return {"result": "error", "side": "load", "stage": "not run",
                "message": "the load side did not reach this variant (an earlier one broke its ranks)"}
    verdict = {"checks": {}}
    saved, p1 = _merged(saved_recs, "saved")
    saver_next, p2 = _merged(saved_recs, "next")
    fresh, _ = _merged(load_recs, "fresh")
    loaded, p3 = _merged(load_recs, "loaded")
    loader_next, p4 = _merged(load_recs, "next")
    invalid = [str(d) for d in p1 + p2 + compare.incomplete(saved)]
    # fresh must differ everywhere, or a load that did nothing could pass for exact
    invalid += [f"fresh state already equals the saved one: {d.name}/{d.key}" for d in compare.unchanged(fresh, saved)]
    if invalid:
        return {"result": "invalid", "side": "lane", "stage": "snapshot", "message": "; ".join(invalid[:6])}
    diffs = p3 + compare.compare(saved, loaded)
    next_diffs = p4 + compare.compare(saver_next, loader_next)
    verdict["checks"]["fresh_differs"] = len(compare.unchanged(fresh, saved)) == 0
    verdict["checks"]["entries"] = sum(len(v) for v in saved.values())
    metadata = _metadata_problems(saved_recs, load_recs)
    writers = sorted({c for r in saved_recs for c in r.get("children_after_save", []) if "Manager" not in c})
    if diffs or next_diffs:
        verdict.update(result="loss", side="load", stage="loaded" if diffs else "next step",
                       message=compare.summarize(diffs or next_diffs),
                       lost=sorted({d.key for d in diffs + next_diffs}))
    elif metadata:
        verdict.update(result="metadata", side="load", stage="metadata", message="; ".join(metadata))
    elif writers:
        verdict.update(result="writers", side="save", stage="save",
                       message=f"writer processes still alive after save returned: {writers}")
    else:
        verdict["result"] = "exact"
    verdict["control"] = _control(load_recs, saved) if verdict["result"] == "exact" else None
    verdict["metadata_source"] = load_recs[0].get("loaded_metadata_source")
    return verdict


def _metadata_problems(saved_recs, load_recs) -> list[str]:
    problems = []
    for s, loaded in zip(saved_recs, load_recs):
        if s.get("content_metadata_supported") and loaded.get("loaded_content_metadata_supported"):
            if s.get("content_metadata") != loaded.get("loaded_content_metadata"):
                problems.append(f"content metadata saved {s.get('content_metadata')!r}, "
                                f"loaded {loaded.get('loaded_content_metadata')!r}")
        if s.get("common_sharding_type") != loaded.get("loaded_common_sharding_type"):
            problems.append(f"sharding type saved {s.get('common_sharding_type')!r}, "
                            f"loaded {loaded.get('loaded_common_sharding_type')!r}")
    return sorted(set(problems))


def _control(load_recs, saved) -> dict:
    """The negative control (load template built with is_loading=False) must not come out exact: the
    comparison has to see the moments it drops (AReaL PR #1468), or the load has to fail loudly."""
    err = _first_error([r.get("control") or {} for r in load_recs])
    if err:
        return {"outcome": "raised", "message": short_message(err["error"])}
    control, problems = compare.merge([r["control"]["loaded"] for r in load_recs])
    diffs = problems + compare.compare(saved, control)
    lost = sorted({d.key for d in diffs})
    if not diffs:
        return {"outcome": "missed", "message": "the comparison found no difference"}
    return {"outcome": "caught" if set(MOMENTS) <= set(lost) else "caught-other", "lost": lost,
            "message": compare.summarize(diffs, limit=2)}


# ---------------------------------------------------------------------------------------- expectations
def load_expected(path=EXPECTED) -> list[dict]:
    import yaml

    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    entries = doc.get("expected") or []
    for i, e in enumerate(entries):
        missing = {"id", "variants", "result", "side", "message", "why"} - set(e)
        if missing:
            raise SystemExit(f"{path}: entry #{i + 1} ({e.get('id')}) lacks {sorted(missing)}")
    return entries


def _in_range(version: str, spec: dict | None) -> bool:
    """``{from: X, before: Y}``, both optional: X <= version < Y (compared by compat.version)."""
    from compat.version import at_least

    spec = spec or {}
    if "from" in spec and not at_least(version, spec["from"]):
        return False
    if "before" in spec and at_least(version, spec["before"]):
        return False
    return True


def _first_saver(path=EXPECTED) -> str | None:
    import yaml

    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh).get("first_saver")


def expectations_for(entries, old, new, variant) -> list[dict]:
    return [e for e in entries if (variant in e["variants"] or "*" in e["variants"])
            and _in_range(old, e.get("saver")) and _in_range(new, e.get("loader"))]


def judge(verdict: dict, expectations: list[dict]) -> tuple[str, str | None]:
    """(status, expected entry id): exact | expected | unexpected | fixed (an expected failure that passed)."""
    if verdict["result"] == "exact":
        control = verdict.get("control") or {}
        if control.get("outcome") == "missed":
            return "unexpected", None
        return ("fixed", expectations[0]["id"]) if expectations else ("exact", None)
    for e in expectations:
        if (e["result"] == verdict["result"] and e["side"] == verdict.get("side")
                and e["message"] in (verdict.get("message") or "")):
            return "expected", e["id"]
    return "unexpected", None


# ------------------------------------------------------------------------------------------------- results
@contextlib.contextmanager
def _locked(directory):
    """Pair sessions may run at once (nox --parallel): one read-modify-write of the shared table at a time."""
    import fcntl
    import hashlib

    os.makedirs(directory, exist_ok=True)
    name = hashlib.sha256(os.path.realpath(directory).encode()).hexdigest()[:16]
    with open(os.path.join(tempfile.gettempdir(), f"mcore_ckpt_lane_{name}.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _read_json(path, default):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default


def record(row: dict, timing: dict, backend: str, results_dir=RESULTS_DIR) -> None:
    """Merge one pair into ckpt_lane[_nccl].json/.md and its timing into ckpt_lane_time.json, atomically."""
    from compat.tooling.fsutil import atomic_write_text

    stem = "ckpt_lane" if backend == "gloo" else f"ckpt_lane_{backend}"
    with _locked(results_dir):
        path = os.path.join(results_dir, f"{stem}.json")
        table = _read_json(path, {})
        table.setdefault("about", "checkpoint lane: saved on megatron-core N-1, loaded on N (tests/ckpt/lane.py)")
        table.setdefault("pairs", {})[row["pair"]] = row
        table["pairs"] = dict(sorted(table["pairs"].items(), key=lambda kv: _pair_key(kv[1])))
        atomic_write_text(path, json.dumps(table, indent=1, sort_keys=False) + "\n")
        atomic_write_text(os.path.join(results_dir, f"{stem}.md"), render_markdown(table))
        tpath = os.path.join(results_dir, f"{stem}_time.json")
        times = _read_json(tpath, {})
        times.setdefault("pairs", {})[row["pair"]] = timing
        times["pairs"] = dict(sorted(times["pairs"].items(), key=lambda kv: _pair_key(kv[1])))
        atomic_write_text(tpath, json.dumps(times, indent=1) + "\n")


def _pair_key(row):
    from compat.version import parse

    return parse(row["old"]), parse(row["new"])


def _cell(v: dict | None, notes: dict) -> str:
    if v is None:
        return "–"
    if v["status"] == "exact":
        control = (v.get("control") or {}).get("outcome")
        return "exact" + ("" if control in ("caught", None) else f" (control {control})")
    key = (v["result"], v["side"], v.get("message"))
    notes.setdefault(key, {"n": len(notes) + 1, "ids": set()})
    if v.get("expected_id"):
        notes[key]["ids"].add(v["expected_id"])
    label = {"expected": "expected", "unexpected": "**UNEXPECTED**", "fixed": "**FIXED**"}.get(v["status"], "")
    what = {"error": f"{v['side']} fails", "loss": "LOSS", "metadata": "metadata differs",
            "writers": "writer left", "invalid": "invalid"}.get(v["result"], v["result"])
    return f"{what} [{notes[key]['n']}] ({label})"


def render_markdown(table: dict) -> str:
    rows = list(table.get("pairs", {}).values())
    variants = [v for v in VARIANT_ORDER if any(v in r["variants"] for r in rows)]
    variants += sorted({v for r in rows for v in r["variants"]} - set(variants))
    notes: dict = {}
    lines = ["# Checkpoint lane: saved on megatron-core N-1, loaded on N", "",
             "Generated by `tests/ckpt/lane.py` (one `nox -s ckpt-<old>-to-<new>` session per pair; 2 ranks, "
             "gloo, torch CPU, FusedAdam state layout emulated: `tests/ckpt/fused_adam.py`). **exact**: bf16 "
             "weights, fp32 main params, exp_avg, exp_avg_sq and step are bit-identical per parameter after the "
             "load, the next step equals the saver's next step, the metadata round-trips, and no writer process "
             "is left behind. The negative control (load template built with `is_loading=False`) never looks "
             "exact: the comparison catches the moments it drops, or megatron raises (shown as *control "
             "raised*). Expected failures are pinned in `tests/ckpt/expected.yaml`.",
             "", "| save → load | " + " | ".join(f"`{v}`" for v in variants) + " |",
             "|---|" + "---|" * len(variants)]
    for r in rows:
        cells = [_cell(r["variants"].get(v), notes) for v in variants]
        lines.append(f"| {r['old']} → {r['new']} | " + " | ".join(cells) + " |")
    first = _first_saver()
    if first:
        lines += ["", f"Pairs start with {first} as the saver (`first_saver` in `tests/ckpt/expected.yaml`): older "
                      "releases cannot save a torch_dist checkpoint on the matrix's torch "
                      "(`ckpt_lane_before_0.13.json`)."]
    if notes:
        lines += ["", "Messages:", ""]
        for (result, side, message), note in sorted(notes.items(), key=lambda kv: kv[1]["n"]):
            pinned = f" (expected: {', '.join(sorted(note['ids']))})" if note["ids"] else ""
            lines.append(f"{note['n']}. {result} on the {side} side: `{(message or '').replace('`', '')}`{pinned}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------- pair
def run_pair(args) -> int:
    entries = load_expected()
    workdir = args.keep or tempfile.mkdtemp(prefix="mcore_ckpt_lane_")
    os.makedirs(os.path.join(workdir, "ckpt"), exist_ok=True)
    problems = []
    save, save_facts = run_side(args.old_python, "save", workdir, backend=args.backend, timeout=args.timeout,
                                torchrun=args.torchrun)
    problems += _side_problems("save", save, save_facts)
    plan = [p for p in save.get("plan", []) if _saved(save, p["id"])]
    plan_path = os.path.join(workdir, "load_plan.json")
    with open(plan_path, "w", encoding="utf-8") as fh:
        json.dump({"plan": plan}, fh)
    load, load_facts = ({}, {}) if not plan else run_side(args.new_python, "load", workdir, backend=args.backend,
                                                           timeout=args.timeout, plan=plan_path,
                                                           torchrun=args.torchrun)
    if plan:
        problems += _side_problems("load", load, load_facts)
    if not save.get("plan"):
        problems.append("the save side ran no variant")

    variants, failed = {}, []
    for p in save.get("plan", []):
        verdict = evaluate(p["id"], save, load, workdir)
        expectations = expectations_for(entries, args.old, args.new, p["id"])
        status, entry = judge(verdict, expectations)
        verdict.update(status=status, expected_id=entry)
        variants[p["id"]] = verdict
        if status in ("unexpected", "fixed"):
            failed.append(p["id"])
    _print_table(args, variants)

    row = {"pair": f"{args.old}->{args.new}", "old": args.old, "new": args.new, "backend": args.backend,
           "torch": _first(save, "torch_version"), "patches": {"save": _first(save, "patches"),
                                                              "load": _first(load, "patches")},
           "variants": variants, "problems": problems}
    timing = {"old": args.old, "new": args.new, "save": save_facts, "load": load_facts,
              "loadavg": _loadavg(), "variants": len(variants)}
    if not args.no_record:
        record(row, timing, args.backend, str(results_dir_for(args.record)))
    if not args.keep:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    for problem in problems:
        print(f"LANE PROBLEM: {problem}", file=sys.stderr)
    for vid in failed:
        v = variants[vid]
        if v["status"] == "fixed":
            print(f"FIXED: {vid} now loads exactly, but tests/ckpt/expected.yaml entry {v['expected_id']!r} "
                  "expects it to fail: update the data", file=sys.stderr)
        else:
            print(f"UNEXPECTED: {vid}: {v['result']} on the {v.get('side')} side ({v.get('stage')}): "
                  f"{v.get('message')}" + (f"; control: {v['control']}" if v.get("control") else ""),
                  file=sys.stderr)
    return 1 if problems or failed else 0


def _saved(save: dict, variant: str) -> bool:
    recs = _ranks_of(save, variant)
    return bool(recs) and all(r and "next" in r and not r.get("error") for r in recs)


def _first(report, key):
    return next((r.get(key) for r in report.get("ranks", []) if r.get(key) is not None), None)


def _side_problems(side, report, facts) -> list[str]:
    problems = []
    if facts.get("timed_out"):
        problems.append(f"{side}: the launcher did not finish in time; its process group was killed")
    if facts.get("exit_code") not in (0, None):
        problems.append(f"{side}: the launcher exited with {facts['exit_code']}")
    if facts.get("group_left_behind"):
        problems.append(f"{side}: processes left behind (killed): {facts['group_left_behind']}")
    if report.get("killed"):
        problems.append(f"{side}: ranks {report['killed']} hung and were killed with their process trees")
    if report.get("left_behind"):
        problems.append(f"{side}: processes left below the launcher (killed): {report['left_behind']}")
    for r in report.get("ranks", []):
        if r.get("error"):
            problems.append(f"{side}: rank {r['rank']} failed outside any variant:\n{r['error']}")
        optimizers = {v.get("torch_optimizer") for v in r.get("variants", {}).values()} - {None}
        if optimizers and optimizers != {"CpuFusedAdam"} and "emulate_fused_adam" in (r.get("patches") or []):
            problems.append(f"{side}: rank {r['rank']} ran {sorted(optimizers)}, not the FusedAdam emulation")
    return problems


def _loadavg() -> str:
    with contextlib.suppress(OSError), open("/proc/loadavg", encoding="ascii") as fh:
        return fh.read().strip()
    return ""


def _print_table(args, variants) -> None:
    print(f"\ncheckpoint lane {args.old} -> {args.new} ({args.backend}):")
    for vid, v in variants.items():
        extra = ""
        if v["result"] == "exact":
            extra = f"  control: {(v.get('control') or {}).get('outcome')}"
        else:
            extra = f"  {v['result']} on {v.get('side')} ({v.get('stage')}): {v.get('message')}"
        print(f"  {vid:28} {v['status']:10}{extra}")


def parser() -> argparse.ArgumentParser:
    ap, sub = subcommand_parser(__doc__)
    p = sub.add_parser("pair", help="save with --old-python, load with --new-python, compare")
    p.add_argument("--old", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--old-python", required=True)
    p.add_argument("--new-python", required=True)
    add_launch_options(p, timeout_env="MCORE_COMPAT_CKPT_TIMEOUT", timeout_help="seconds per side before its "
                       "ranks are killed", torchrun_help="launch each side's ranks with torchrun --standalone")
    p.add_argument("--keep", metavar="DIR", help="work in DIR and keep the checkpoints and reports")
    p.add_argument("--no-record", action="store_true", help="write no table and no timing at all")
    p.add_argument("--record", action="store_true", help="write ckpt_lane.* and ckpt_lane_time.json in "
                   "benchmarks/results/ (tracked); without it they go to benchmarks/results/raw/ (ignored)")
    sub.add_parser("table", help="re-render benchmarks/results/ckpt_lane.md from ckpt_lane.json")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.command == "table":
        from compat.tooling.fsutil import atomic_write_text

        for stem in ("ckpt_lane", "ckpt_lane_nccl"):
            path = os.path.join(RESULTS_DIR, f"{stem}.json")
            if os.path.exists(path):
                atomic_write_text(os.path.join(RESULTS_DIR, f"{stem}.md"), render_markdown(_read_json(path, {})))
        return 0
    return run_pair(args)


if __name__ == "__main__":
    sys.exit(main())
