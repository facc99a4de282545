"""Equivalence lane driver: the same weights, data and config on every pin; are the bits the same?

    python tests/equiv/lane.py pin --version 0.16.1 --python P [--torchrun] [--backend gloo]   one pin's run
    python tests/equiv/lane.py compare                 adjacent pins: results, expectations (exit 1: unexpected)
    python tests/equiv/lane.py table                   re-render benchmarks/results/equivalence.md from the JSON
    python tests/equiv/lane.py verdicts [--check]      compat/tooling/data/training_lane.json (the gate's Training section)

The checkout root must be on PYTHONPATH (the script imports tools/; the nox lane sessions set it):
``PYTHONPATH=. python tests/equiv/lane.py ...`` from the root.

``pin`` writes the plan (registry only: what compat sends that release, per variant), runs worker.py with the pin's
python (forked ranks, or ``--torchrun``: ``python -m torch.distributed.run --standalone``), and keeps its record in
the work dir (``MCORE_COMPAT_EQUIV_WORK``, default ``.nox/equiv-work``). ``compare`` walks every adjacent pair of
lane pins with a record, holds each difference against ``expected.yaml`` and writes ``equivalence.{json,md}``:
with ``--record`` into benchmarks/results/ (and the gate's verdicts), otherwise into the ignored
benchmarks/results/raw/ (tools/results.py).

Variants: ``canonical`` sends the user's fields plus, for every field whose default differs between lane pins, the
first lane pin's default (where the release has the field and compat accepts it): one effective config everywhere.
``defaults`` sends only the user's fields, so each release's own defaults apply.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time

import diffs  # this folder's: first on sys.path when run, found by tools/siblings.py when loaded as a module

try:  # the checkout's tools/: the root on PYTHONPATH (the nox lane sessions set it)
    from tools.lane_common import add_launch_options, subcommand_parser, worker_env
    from tools.results import RECORDED, results_dir_for
except ModuleNotFoundError as exc:
    if exc.name != "tools":
        raise
    raise SystemExit(f"{__file__} imports the checkout's tools/: run it from the checkout root as "
                     f"`PYTHONPATH=. python tests/equiv/lane.py ...`") from None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

CONFIG = os.path.join(HERE, "config.json")
EXPECTED = os.path.join(HERE, "expected.yaml")
RESULTS_DIR = str(RECORDED)  # the tracked results (tools/results.py owns the path)
TRAINING_DATA = os.path.join(REPO_ROOT, "compat", "tooling", "data", "training_lane.json")
CONFIGS = ("transformer", "optimizer", "ddp")


def work_dir() -> str:
    return os.environ.get("MCORE_COMPAT_EQUIV_WORK") or os.path.join(REPO_ROOT, ".nox", "equiv-work")


def _read_json(path, default=None):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default


def _write_json(path, data) -> None:
    from compat.tooling.fsutil import atomic_write_text

    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1, default=str) + "\n")


# ------------------------------------------------------------------------------------------ lane pins, data
def load_expected(path=EXPECTED) -> dict:
    import yaml

    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    for i, e in enumerate(doc.get("expected") or []):
        missing = {"id", "variants", "first", "why"} - set(e)
        if missing:
            raise SystemExit(f"{path}: entry #{i + 1} ({e.get('id')}) lacks {sorted(missing)}")
    return doc


def lane_versions(matrix=None) -> list[str]:
    """The matrix.yaml pins from expected.yaml's first_pin on, oldest first."""
    from compat.version import at_least
    from tools.matrix import load_matrix

    first = load_expected()["first_pin"]
    pins = load_matrix(matrix) if matrix else load_matrix()
    return [p.version for p in pins if at_least(p.version, first)]


# ------------------------------------------------------------------------------------------------ the plan
def _user_config() -> dict:
    with open(CONFIG, encoding="utf-8") as fh:
        return json.load(fh)


def drifting_defaults(versions: list[str], user: dict) -> dict:
    """{config: {field: value}}: fields whose effective default differs between the lane's releases, with the value
    of the oldest release that has the field (JSON scalars only; a dtype or callable default is left alone)."""
    from compat.resolution import resolve_configs

    seen: dict = {}
    for version in versions:
        res = resolve_configs(version=version, **{k: user[k] for k in CONFIGS})
        for key, r in res.items():
            for name, f in r.fields.items():
                if f.target_name is None or f.source == "user":
                    continue
                seen.setdefault((key, name), []).append(f.value)
    out: dict = {k: {} for k in CONFIGS}
    for (key, name), values in seen.items():
        scalar = all(v is None or isinstance(v, (bool, int, float, str)) for v in values)
        if scalar and len({json.dumps(v) for v in values}) > 1:
            out[key][name] = values[0]
    return out


def variant_ids() -> list[str]:
    return [v["id"] for v in _user_config()["variants"]]


def control_problems(record: dict) -> list[str]:
    """A control variant must differ from the variant it controls on the same pin: else the lane cannot see the
    change it makes (here: grads reduced in bf16 instead of fp32), let alone a release's."""
    problems = []
    for v in record["plan"]["variants"]:
        base = v.get("control_of")
        a, b = record["variants"].get(base), record["variants"].get(v["id"])
        if base and a and b and diffs.first_difference(a, b) is None:
            problems.append(f"control {v['id']!r} is bit-identical to {base!r} on {record['version']}: the "
                            "comparison is blind")
    return problems


def controls(record: dict) -> dict:
    """Per control variant: where it first parts from the variant it controls on this pin, and by how much."""
    out = {}
    for v in record["plan"]["variants"]:
        base = v.get("control_of")
        a, b = record["variants"].get(base), record["variants"].get(v["id"])
        if base and a and b:
            first = diffs.first_difference(a, b)
            out[v["id"]] = {"of": base, "first": diffs.describe(first),
                            "size": diffs.size(first, a.get("tensors"), b.get("tensors")) if first else None,
                            "loss_gap": diffs.loss_gap(a, b)["max_abs"], "memory": diffs.memory_changes(a, b)}
    return out


def plan_for(version: str, versions: list[str]) -> dict:
    """What the worker runs on ``version``: per variant the overrides, and what compat sends from them."""
    from compat.errors import CompatError
    from compat.resolution import resolve_configs

    user = _user_config()
    pinned = drifting_defaults(versions, user)
    variants = []
    for spec in user["variants"]:
        vid = spec["id"]
        overrides = {k: {**user[k], **spec.get(k, {})} for k in CONFIGS}
        left_out, kept = {}, {k: [] for k in CONFIGS}
        if spec.get("pin_drifting_defaults"):
            for key in CONFIGS:
                for name, value in pinned[key].items():
                    trial = {**overrides, key: {**overrides[key], name: value}}
                    try:
                        res = resolve_configs(version=version, **trial)
                    except CompatError as exc:
                        left_out[f"{key}.{name}"] = str(exc).splitlines()[0][:200]
                        continue
                    field = getattr(res, key).fields.get(name)
                    if field is not None and field.target_name is not None:
                        overrides = trial
                        kept[key].append(name)
        sent = resolve_configs(version=version, **overrides).kwargs()
        variants.append({"id": vid, "tp": spec.get("tp", 1), "overrides": overrides, "pinned": kept, "sent": sent,
                         "not_pinned": left_out, "control_of": spec.get("control_of")})
    return {"version": version, "seed": user["seed"], "steps": user["steps"], "world_size": user["world_size"],
            "variants": variants}


# ------------------------------------------------------------------------------------------------ one pin
def _run_group(cmd, timeout: float, env=None) -> dict:
    """Run ``cmd`` in its own process group; kill the group on timeout or when something outlives the command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, start_new_session=True, env=env)
    facts = {"timed_out": False}
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        facts["timed_out"] = True
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the ranks and anything they started
    proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    facts.update(exit_code=proc.returncode, wall_s=round(time.monotonic() - t0, 2),
                 cpu_s=round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2))
    return facts


def worker_command(python: str, plan_path: str, out_dir: str, *, backend: str, world_size: int,
                   torchrun: bool) -> list[str]:
    worker = os.path.join(HERE, "worker.py")
    args = ["--plan", plan_path, "--out-dir", out_dir, "--backend", backend]
    if torchrun:
        return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world_size}", worker, *args]
    return [python, worker, *args, "--world-size", str(world_size)]


def merge_ranks(plan: dict, out_dir: str, world_size: int) -> dict:
    """The pin's record: rank 0's steps per variant, every rank's memory, and whether the data-parallel replicas
    (ranks of the same tensor-parallel rank) ended every step with the same parameters."""
    ranks = [_read_json(os.path.join(out_dir, f"rank{r}.json"), {"rank": r, "error": "no report"})
             for r in range(world_size)]
    variants, problems = {}, [f"rank {r['rank']}: {r['error']}" for r in ranks if r.get("error")]
    for v in plan["variants"]:
        recs = [r.get("variants", {}).get(v["id"]) for r in ranks]
        if any(rec is None for rec in recs):
            continue
        first = recs[0]
        replicas = [r for r in recs if r["tp_rank"] == first["tp_rank"]]
        split = [s for s in range(len(first["steps"]))
                 if len({json.dumps(r["steps"][s]["param_sha256"], sort_keys=True) for r in replicas}) > 1]
        if split:
            problems.append(f"{v['id']}: data-parallel replicas hold different parameters after step {split[0]}")
        variants[v["id"]] = {
            **{k: first[k] for k in ("steps", "initial_sha256", "param_names", "raw_param_names", "built",
                                     "optimizer", "buffers", "wall_s", "tp", "pinned_refused")},
            "memory": [r["memory"] for r in recs], "replicas_agree": not split,
            "tensors": os.path.join(out_dir, f"rank0-{v['id']}.pt"),
        }
    info = next((r for r in ranks if not r.get("error")), ranks[0])
    return {"variants": variants, "problems": problems,
            "ranks": [{k: r.get(k) for k in ("rank", "init_method", "import_and_init_s", "total_s")} for r in ranks],
            "patches": info.get("patches"), "emulation": info.get("emulation"),
            "torch": info.get("torch_version"), "megatron": info.get("megatron_version")}


def run_pin(args) -> int:
    versions = lane_versions()
    plan = plan_for(args.version, versions)
    out_dir = os.path.join(work_dir(), args.version)
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):  # a previous run's files must not pass for this one's
        os.unlink(os.path.join(out_dir, name))
    plan_path = os.path.join(out_dir, "plan.json")
    world_size = args.world_size or plan["world_size"]
    plan["skipped"] = {v["id"]: f"tensor parallel {v['tp']} does not divide {world_size} ranks"
                       for v in plan["variants"] if world_size % v["tp"]}
    plan["variants"] = [v for v in plan["variants"] if v["id"] not in plan["skipped"]]
    _write_json(plan_path, plan)
    cmd = worker_command(args.python, plan_path, out_dir, backend=args.backend, world_size=world_size,
                         torchrun=args.torchrun)
    env = worker_env({**os.environ, "OMP_NUM_THREADS": "1"})
    facts = _run_group(cmd, args.timeout, env)
    record = {"version": args.version, "backend": args.backend, "world_size": world_size,
              "launcher": "torchrun" if args.torchrun else "fork", "plan": plan, "run": facts,
              **merge_ranks(plan, out_dir, world_size)}
    record["problems"] += control_problems(record)
    if facts["timed_out"]:
        record["problems"].append(f"the run did not finish in {args.timeout:.0f} s; its process group was killed")
    if set(record["variants"]) != {v["id"] for v in plan["variants"]}:
        record["problems"].append(f"variants without a record: "
                                  f"{sorted({v['id'] for v in plan['variants']} - set(record['variants']))}")
    _write_json(os.path.join(out_dir, "record.json"), record)
    print(f"equivalence lane {args.version} ({record['launcher']}, {world_size} ranks, {args.backend}): "
          f"{facts['wall_s']} s wall, {facts['cpu_s']} s CPU")
    for vid, v in record["variants"].items():
        losses = " ".join(f"{s['loss']:.4f}" for s in v["steps"])
        print(f"  {vid:10} losses {losses}")
    for problem in record["problems"]:
        print(f"LANE PROBLEM: {problem}", file=sys.stderr)
    return 1 if record["problems"] else 0


# ------------------------------------------------------------------------------------------------- compare
def _in_range(version: str, spec: dict | None) -> bool:
    from compat.version import at_least

    spec = spec or {}
    return (("from" not in spec or at_least(version, spec["from"]))
            and ("before" not in spec or not at_least(version, spec["before"])))


def judge(description: str, old: str, new: str, variant: str, entries: list[dict]) -> tuple[str, str | None]:
    """identical | expected | unexpected | vanished (an expected difference that no longer shows)."""
    mine = [e for e in entries if (variant in e["variants"] or "*" in e["variants"])
            and _in_range(old, e.get("old")) and _in_range(new, e.get("new"))]
    if description == "identical":
        return ("vanished", mine[0]["id"]) if mine else ("identical", None)
    for e in mine:
        if e["first"] in description:
            return "expected", e["id"]
    return "unexpected", None


def gate_changes(old: str, new: str) -> dict:
    """What the registry says changed between the releases, per config class: fields added and removed, defaults
    changed, __post_init__ checks added and dropped (the gate's facts, without its verdicts)."""
    from compat.registry import registry

    reg = registry()
    out = {}
    for key in CONFIGS:
        a, b = reg.schema(old, config=key), reg.schema(new, config=key)
        fa, fb = {f.name: f for f in a.fields}, {f.name: f for f in b.fields}
        defaults = {n: [fa[n].default_text, fb[n].default_text] for n in sorted(set(fa) & set(fb))
                    if fa[n].default_text != fb[n].default_text}
        ca = {(c.owner, c.message, c.test, c.when) for c in a.checks}
        cb = {(c.owner, c.message, c.test, c.when) for c in b.checks}
        out[key] = {"added": sorted(set(fb) - set(fa)), "removed": sorted(set(fa) - set(fb)),
                    "defaults": defaults, "checks_added": len(cb - ca), "checks_dropped": len(ca - cb)}
    return out


def sent_changes(old_sent: dict, new_sent: dict) -> dict:
    """What compat sent differently: {config: {kwarg: [old, new]}} (absent as None)."""
    out = {}
    for key in CONFIGS:
        a, b = old_sent.get(key, {}), new_sent.get(key, {})
        changed = {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
        if changed:
            out[key] = changed
    return out


def compare_pair(old: dict, new: dict, entries: list[dict]) -> dict:
    row = {"pair": f"{old['version']}->{new['version']}", "old": old["version"], "new": new["version"],
           "variants": {}, "problems": old["problems"] + new["problems"],
           "gate": gate_changes(old["version"], new["version"])}
    plans = {(r["version"], v["id"]): v for r in (old, new) for v in r["plan"]["variants"]}
    for vid in variant_ids():
        a, b = old["variants"].get(vid), new["variants"].get(vid)
        if any(vid in r["plan"].get("skipped", {}) for r in (old, new)):
            continue
        if a is None or b is None:
            row["problems"].append(f"{vid}: no record on {old['version'] if a is None else new['version']}")
            continue
        first = diffs.first_difference(a, b)
        memory = diffs.memory_changes(a, b)
        # bit-identical training with other buffer or optimizer-state bytes is a difference too (padding, a copy)
        description = diffs.describe(first) if first or not memory else "memory: " + ", ".join(memory)
        status, entry = judge(description, old["version"], new["version"], vid, entries)
        row["variants"][vid] = {
            "status": status, "expected_id": entry, "first": first, "description": description,
            "size": diffs.size(first, a.get("tensors"), b.get("tensors")) if first else None,
            "loss_gap": diffs.loss_gap(a, b), "memory": memory,
            "built": diffs.config_changes(a["built"], b["built"]),
            "sent": sent_changes(plans[(old["version"], vid)]["sent"], plans[(new["version"], vid)]["sent"]),
        }
    return row


def run_compare(args) -> int:
    doc = load_expected()
    entries = doc.get("expected") or []
    versions = lane_versions()
    records = {v: _read_json(os.path.join(work_dir(), v, "record.json")) for v in versions}
    missing = [v for v, r in records.items() if r is None]
    present = [v for v in versions if records[v] is not None]
    stem = "equivalence" if args.backend == "gloo" else f"equivalence_{args.backend}"
    out_dir = str(results_dir_for(args.record))
    results = _read_json(os.path.join(out_dir, f"{stem}.json"), {}) or {}
    results["about"] = ("equivalence lane: one canonical config, identical initial weights and batches, trained "
                        "on adjacent megatron-core pins (tests/equiv/lane.py)")
    results["config"] = _user_config()
    results.setdefault("pins", {})
    results.setdefault("pairs", {})
    for v in present:
        r = records[v]
        results["pins"][v] = {"launcher": r["launcher"], "world_size": r["world_size"], "backend": r["backend"],
                              "wall_s": r["run"]["wall_s"], "cpu_s": r["run"]["cpu_s"], "patches": r["patches"],
                              "torch": r["torch"], "problems": r["problems"],
                              "losses": {vid: [s["loss"] for s in rv["steps"]] for vid, rv in r["variants"].items()},
                              "memory_rank0": {vid: rv["memory"][0] for vid, rv in r["variants"].items()},
                              "not_pinned": {v2["id"]: v2["not_pinned"] for v2 in r["plan"]["variants"]
                                             if v2["not_pinned"]},
                              "refused_by_release": {vid: rv["pinned_refused"] for vid, rv in r["variants"].items()
                                                     if rv.get("pinned_refused")},
                              "controls": controls(r)}
    failed = []
    for a, b in zip(versions, versions[1:]):
        if records[a] is None or records[b] is None:
            continue
        row = compare_pair(records[a], records[b], entries)
        results["pairs"][row["pair"]] = row
        for vid, v in row["variants"].items():
            print(f"{row['pair']:18} {vid:10} {v['status']:10} {v['description']}")
            if v["status"] in ("unexpected", "vanished"):
                failed.append(f"{row['pair']} {vid}: {v['status']}: {v['description']}")
        failed += [f"{row['pair']}: {p}" for p in row["problems"]]
    results["pairs"] = dict(sorted(results["pairs"].items(), key=lambda kv: _pair_key(kv[1])))
    results["pins"] = dict(sorted(results["pins"].items(), key=lambda kv: _version_key(kv[0])))
    results["before_first"] = doc.get("before_first") or []
    results["first_pin"] = doc["first_pin"]
    if not args.no_record:
        _write_json(os.path.join(out_dir, f"{stem}.json"), results)
        from compat.tooling.fsutil import atomic_write_text

        atomic_write_text(os.path.join(out_dir, f"{stem}.md"), render_markdown(results))
        if args.backend == "gloo" and args.record:  # the gate's Training section reads the CPU lane's verdicts
            atomic_write_text(TRAINING_DATA, verdicts_text(results))
    if missing and args.require_all:
        failed.append(f"no record for {', '.join(missing)} (run their equiv-<version> sessions)")
    for line in failed:
        print(f"EQUIVALENCE: {line}", file=sys.stderr)
    return 1 if failed else 0


def _version_key(v):
    from compat.version import parse

    return parse(v)


def _pair_key(row):
    return _version_key(row["old"]), _version_key(row["new"])


# ------------------------------------------------------------------------------------------------ markdown
def _size_text(size: dict | None) -> str:
    if not size:
        return ""
    if "max_abs" in size and size.get("max_abs") is not None:
        rel = size.get("rel_l2")
        return (f"max abs Δ {size['max_abs']:.3g}" + (f", rel. L2 {rel:.3g}" if rel is not None else "")
                + f", {size['elements_differ']}/{size['elements']} elements")
    if size.get("abs") is not None:
        return f"abs Δ {size['abs']:.3g} (rel. {size['rel']:.3g})"
    return size.get("note", "")


def _changes_text(changes: dict) -> str:
    parts = []
    for key, fields in changes.items():
        parts += [f"{key}.{f}: {a!r} → {b!r}" for f, (a, b) in fields.items()]
    return "; ".join(parts) if parts else "none"


def _gate_text(gate: dict) -> str:
    parts = []
    for key, g in gate.items():
        bits = []
        if g["defaults"]:
            bits.append("defaults " + ", ".join(f"`{n}` {a} → {b}" for n, (a, b) in g["defaults"].items()))
        if g["added"] or g["removed"]:
            bits.append(f"+{len(g['added'])}/-{len(g['removed'])} fields")
        if g["checks_added"] or g["checks_dropped"]:
            bits.append(f"checks +{g['checks_added']}/-{g['checks_dropped']}")
        if bits:
            parts.append(f"{key}: " + "; ".join(bits))
    return " · ".join(parts) if parts else "no config change"


def render_markdown(results: dict) -> str:
    lines = ["# Equivalence lane: one config, the same weights and data, adjacent megatron-core pins", "",
             "Generated by `tests/equiv/lane.py compare` (`nox -s equiv`). A tiny GPTModel (local layer spec, "
             f"{results['config']['transformer']['num_layers']} layers, hidden "
             f"{results['config']['transformer']['hidden_size']}, bf16 in Float16Module) with "
             "DistributedDataParallel and the distributed optimizer (megatron's FusedAdam path, emulated on CPU by "
             "`tests/ckpt/fused_adam.py`), the FP32 resolver on, on "
             f"{results['config']['world_size']} gloo ranks, trained {results['config']['steps']} steps from the "
             "same initial weights (by stable parameter name) on the same token batches. Compared bit for bit: "
             "loss, every reduced grad, grad norm, zeros in grads, every parameter after each step.", "",
             "Variants (`tests/equiv/config.json`): " + "; ".join(f"**{v['id']}**: {v['why']}"
                                                              for v in results["config"].get("variants", [])) + ".",
             "",
             "| pair | variant | result | first difference | size | largest loss gap | gate: config changes | "
             "compat sent differently | memory |", "|---|---|---|---|---|---|---|---|---|"]
    for row in results.get("pairs", {}).values():
        for vid, v in row["variants"].items():
            status = {"identical": "identical", "expected": f"expected ({v['expected_id']})",
                      "unexpected": "**UNEXPECTED**", "vanished": f"**VANISHED** ({v['expected_id']})"}[v["status"]]
            gap = v["loss_gap"]
            memory = _changes_text({"bytes": v["memory"]}) if v["memory"] else "same"
            lines.append(f"| {row['old']} → {row['new']} | {vid} | {status} | {v['description']} | "
                         f"{_size_text(v['size'])} | {gap['max_abs']:.3g} | {_gate_text(row['gate'])} | "
                         f"{_changes_text(v['sent'])} | {memory} |")
    lines += ["", "| pin | launcher | wall s | CPU s | canonical losses (first, last) | rank-0 bytes "
              "(param buffer, grad buffer, main params, optimizer state) | control: first difference, size |",
              "|---|---|---|---|---|---|---|"]
    for version, pin in results.get("pins", {}).items():
        losses = pin["losses"].get("canonical") or []
        mem = pin["memory_rank0"].get("canonical") or {}
        lines.append(f"| {version} | {pin['launcher']} ({pin['world_size']}, {pin['backend']}) | {pin['wall_s']} | "
                     f"{pin['cpu_s']} | {losses[0]:.6f}, {losses[-1]:.6f} | " if losses else
                     f"| {version} | {pin['launcher']} | {pin['wall_s']} | {pin['cpu_s']} | – | ")
        lines[-1] += ", ".join(str(mem.get(k, "–")) for k in ("param_buffer_bytes", "grad_buffer_bytes",
                                                              "main_param_bytes", "optimizer_state_bytes")) + " | "
        lines[-1] += "; ".join(f"{vid} vs {c['of']}: {c['first']}, {_size_text(c['size'])}, largest loss gap "
                               f"{c['loss_gap']:.3g}" for vid, c in pin.get("controls", {}).items()) + " |"
    for version, pin in results.get("pins", {}).items():
        for vid, fields in pin.get("refused_by_release", {}).items():
            names = ", ".join(f"`{f}`" for f in sorted(fields))
            lines += ["", f"On {version} the `{vid}` variant leaves {names} at the release's default: the release "
                      f"refuses the older default ({next(iter(fields.values()))})."]
    lines += ["", f"The lane starts at {results.get('first_pin')} (`first_pin` in `tests/equiv/expected.yaml`)."]
    for entry in results.get("before_first") or []:
        lines.append(f"- {entry['version']}: {entry['why']}")
    expected = {v["expected_id"] for row in results.get("pairs", {}).values() for v in row["variants"].values()
                if v.get("expected_id")}
    if expected:
        lines += ["", "Expected differences (`tests/equiv/expected.yaml`):", ""]
        for e in load_expected().get("expected") or []:
            if e["id"] in expected:
                lines.append(f"- **{e['id']}**: {e['why']}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ verdicts
def verdicts(results: dict) -> dict:
    """The gate's view: per pair and variant, identical or where it first differs and why (no timings)."""
    why = {e["id"]: e["why"] for e in load_expected().get("expected") or []}
    pairs = []
    for row in results.get("pairs", {}).values():
        variants = {}
        for vid, v in sorted(row["variants"].items()):
            variants[vid] = {"status": v["status"], "first": v["description"],
                             "why": why.get(v.get("expected_id"))}
        pairs.append({"old": row["old"], "new": row["new"], "variants": variants})
    return {"about": "equivalence-lane verdicts (tests/equiv/lane.py verdicts, from benchmarks/results/"
                     "equivalence.json; do not edit)", "pairs": pairs}


def verdicts_text(results: dict) -> str:
    return json.dumps(verdicts(results), indent=1, sort_keys=True) + "\n"


def run_verdicts(args) -> int:
    from compat.tooling.fsutil import atomic_write_text

    text = verdicts_text(_read_json(os.path.join(RESULTS_DIR, "equivalence.json"), {}))
    if args.check:
        with open(TRAINING_DATA, encoding="utf-8") as fh:
            same = fh.read() == text
        if not same:
            print(f"{TRAINING_DATA} is stale: run PYTHONPATH=. python tests/equiv/lane.py verdicts", file=sys.stderr)
        return 0 if same else 1
    atomic_write_text(TRAINING_DATA, text)
    return 0


def parser() -> argparse.ArgumentParser:
    ap, sub = subcommand_parser(__doc__)
    p = sub.add_parser("pin", help="run the lane on one pin (its venv's python)")
    p.add_argument("--version", required=True)
    p.add_argument("--python", required=True)
    add_launch_options(p, timeout_env="MCORE_COMPAT_EQUIV_TIMEOUT",
                       torchrun_help="launch the ranks with torchrun --standalone")
    p.add_argument("--world-size", type=int, default=0, help="ranks (default: config.json's world_size)")
    c = sub.add_parser("compare", help="compare adjacent pins' records, write equivalence.* "
                       "(in benchmarks/results/ with --record)")
    c.add_argument("--no-record", action="store_true", help="write no results at all")
    c.add_argument("--record", action="store_true", help="write equivalence.* in benchmarks/results/ and the gate's "
                   "verdicts (tracked); without it the results go to benchmarks/results/raw/ (ignored)")
    c.add_argument("--require-all", action="store_true", help="fail when a lane pin has no record")
    c.add_argument("--backend", default="gloo", choices=("gloo", "nccl"),
                   help="which results file: equivalence.json (gloo) or equivalence_nccl.json")
    sub.add_parser("table", help="re-render equivalence.md from equivalence.json")
    d = sub.add_parser("verdicts", help="write compat/tooling/data/training_lane.json from equivalence.json")
    d.add_argument("--check", action="store_true")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.command == "pin":
        return run_pin(args)
    if args.command == "compare":
        return run_compare(args)
    if args.command == "verdicts":
        return run_verdicts(args)
    from compat.tooling.fsutil import atomic_write_text

    atomic_write_text(os.path.join(RESULTS_DIR, "equivalence.md"),
                      render_markdown(_read_json(os.path.join(RESULTS_DIR, "equivalence.json"), {})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
