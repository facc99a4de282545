"""Real use of the config API: configs harvested from Megatron-Bridge recipes, NeMo-RL and verl, run through
``compat.resolve``/``compat.resolve_configs`` on every registry release and built with ``compat.build_*_config``
on every pinned megatron-core.

    python -m benchmarks.real_configs harvest [--mirror DIR]  # -> results/raw/real_configs/harvest.json
    python -m benchmarks.real_configs registry                         # every config x every registry release
    .nox/mcore-0-19-2/bin/python -m benchmarks.real_configs build      # real objects on that venv's megatron-core
    python -m benchmarks.real_configs fixture                          # -> tests/contract/data/real_configs.json
    python -m benchmarks.real_configs report                           # -> benchmarks/results/real_configs.{json,md}
    python -m benchmarks.real_configs all                              # all of them, build on every .nox/mcore-*

The snapshots are the git directories the session's ``fetch`` tool writes (``MIRROR/<owner>+<name>/repo``);
nothing of the projects is imported, run or copied here. The full harvest and the per-pin runs stay in the
ignored ``benchmarks/results/raw/real_configs/`` (8 MB); the report keeps the figures and the findings with
file:line, and ``tests/contract/data/real_configs.json`` a few harvested configs for the contract test.

Each harvested block maps to one config class: ``ddp``, ``optimizer``, or for model blocks ``transformer``
(``mla`` when a key exists only in MLATransformerConfig or the block recomputes ``mla_up_proj``). Keys that are no
field of any release of that class (nor an old name of one, nor a field of Megatron-LM main/dev) are
wrapper-only: they are reported and not passed. Model blocks get their size from a checkpoint in the real stack
(Bridge's AutoBridge, NeMo-RL and verl read the HF config), so the fields the block does not set among
num_layers, hidden_size, num_attention_heads (and num_moe_experts under expert parallelism; pipeline_model_
parallel_size and pipeline_dtype when a block sets first/last-stage layer counts but no PP size, as verl's
override blocks do) are filled with a small skeleton consistent with the block's parallel sizes. Every refusal
says whether a skeleton field, a field the block leaves to its default or one the wrapper writes over it is
involved: those need the real base (checkpoint, the wrapper's mixed-precision settings) to judge.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import compat  # noqa: E402
from compat.annotations import type_of  # noqa: E402
from compat.canonical import canonical  # noqa: E402
from compat.errors import CompatError, ConstraintError, FieldTypeError, InvalidValueError, UnsupportedFieldError  # noqa: E402
from compat.registry import registry  # noqa: E402
from tools.git_snapshots import add_mirror_option, mirror_root  # noqa: E402

WORK = ROOT / "benchmarks" / "results" / "raw" / "real_configs"  # ignored by git: harvest and per-pin runs
HARVEST = WORK / "harvest.json"
RESULTS = ROOT / "benchmarks" / "results"
PROJECTS = {"NVIDIA-NeMo/Megatron-Bridge": "bridge", "NVIDIA-NeMo/RL": "nemo_rl", "volcengine/verl": "verl"}
PIN_VERSIONS = ["0.7.0", "0.8.0", "0.9.0", "0.10.0", "0.11.0", "0.12.3", "0.13.1", "0.14.0", "0.15.3", "0.16.1",
                "0.17.1", "0.18.2", "0.19.2"]


# ------------------------------------------------------------------------------------------------ harvest
def harvest(mirror: Path) -> dict:
    import real_configs_bridge as bridge
    import real_configs_harvest as h

    out = {"projects": {}, "configs": [], "wrapper_defaults": [], "yaml_typing": []}
    readers = {"NVIDIA-NeMo/Megatron-Bridge": bridge.harvest_bridge, "NVIDIA-NeMo/RL": h.harvest_nemo_rl,
               "volcengine/verl": h.harvest_verl}
    for project, reader in readers.items():
        snap = h.Snapshot(mirror / project.replace("/", "+") / "repo", project)
        started = time.perf_counter()
        records, extra = reader(snap)
        out["projects"][project] = {"commit": snap.commit, "configs": len(records),
                                    "seconds": round(time.perf_counter() - started, 2)}
        if project.endswith("Megatron-Bridge"):
            out["projects"][project]["interpreter"] = extra
            out["wrapper_defaults"] = bridge.bridge_wrapper_defaults(snap)
        else:
            out["yaml_typing"] += [{"project": project, **n} for n in extra]
        out["configs"] += records
    nemo_rl = h.Snapshot(mirror / "NVIDIA-NeMo+RL" / "repo", "NVIDIA-NeMo/RL")
    out["forwarding"] = {"NVIDIA-NeMo/RL": h.keyword_sources(nemo_rl, "nemo_rl/models/megatron/setup.py",
                                                             "DistributedDataParallelConfig",
                                                             "distributed_data_parallel_config")}
    for i, rec in enumerate(out["configs"]):
        rec["id"] = i
    return out


# ------------------------------------------------------------------------------------------------ mapping
def _canon(key: str):
    return canonical(registry(), None, config=key)


@functools.cache
def _released(key: str) -> frozenset:
    c = _canon(key)
    return frozenset({n for n, f in c.fields.items() if f.introduced is not None} | set(c.renames))


@functools.cache
def _unreleased(key: str) -> frozenset:
    c = _canon(key)
    return frozenset(n for n, f in c.fields.items() if f.introduced is None)


def map_block(rec: dict) -> dict:
    """Config key, and the block's keys split into released fields, unreleased (main/dev) fields, wrapper-only."""
    if rec["kind"] == "model":
        mla_only = _released("mla") - _released("transformer")
        recompute = rec["values"].get("recompute_modules")
        mla = set(rec["values"]) & mla_only or (isinstance(recompute, list) and "mla_up_proj" in recompute)
        key = "mla" if mla else "transformer"
    else:
        key = rec["kind"]
    released, unreleased = _released(key), _unreleased(key)
    split = {"fields": {}, "unreleased": {}, "wrapper_only": {}}
    for name, value in rec["values"].items():
        part = "fields" if name in released else "unreleased" if name in unreleased else "wrapper_only"
        split[part][name] = value
    return {"config": key, **split}


def skeleton(values: dict) -> dict:
    """Model size fields a checkpoint would give, sized to the block's parallel settings; only those unset."""
    def size(name):
        v = values.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 1

    tp, pp, vpp = size("tensor_model_parallel_size"), size("pipeline_model_parallel_size"), \
        size("virtual_pipeline_model_parallel_size")
    staged = [values.get(k) for k in ("num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage")]
    extra = {}
    if "pipeline_model_parallel_size" not in values and any(staged):  # verl: the engine config sets PP
        pp = extra["pipeline_model_parallel_size"] = 1 + sum(1 for s in staged if s) + 1
    heads = values.get("num_attention_heads") or 8 * tp
    first, last = values.get("num_layers_in_first_pipeline_stage"), values.get("num_layers_in_last_pipeline_stage")
    middle = max(pp - (first is not None) - (last is not None), 0)
    layers = (first or 0) + (last or 0) + 2 * vpp * middle if (first or last) else 2 * pp * vpp
    if pp > 1 and not (first or last):  # Megatron splits num_layers + the stages counted for embedding and loss
        layers -= bool(values.get("account_for_embedding_in_pipeline_split")) + \
            bool(values.get("account_for_loss_in_pipeline_split"))
    layout = values.get("pipeline_model_parallel_layout")
    if isinstance(layout, list) and all(isinstance(stage, list) for stage in layout):
        layers = sum(stage.count("decoder") for stage in layout)  # the layout names every decoder layer
    wanted = {"num_layers": layers, "hidden_size": 64 * heads, "num_attention_heads": heads}
    if size("expert_model_parallel_size") > 1:  # expert parallelism needs experts; the checkpoint has them
        wanted["num_moe_experts"] = 8 * size("expert_model_parallel_size")
    if extra:
        wanted["pipeline_dtype"] = "bfloat16"  # what the wrapper's precision settings give a PP > 1 run
    return {k: v for k, v in {**extra, **wanted}.items() if k not in values}


def _dtype_value(config: str, name: str, value):
    """A torch dtype the project passes ("torch.bfloat16") is given to the API by name where the field is a dtype;
    elsewhere it stays the dtype object it is (a str marker here, the real object in the pin builds)."""
    spec = _canon(config).fields.get(name)
    if isinstance(value, str) and value.startswith("torch.") and spec is not None and \
            "dtype" in type_of(spec.annotation).kinds():
        return value.removeprefix("torch.")
    return value


def live_values(values: dict) -> dict:
    """The values as the project passes them: "torch.<dtype>" markers become torch dtypes (pin venvs only)."""
    import torch

    return {k: getattr(torch, v.removeprefix("torch.")) if isinstance(v, str) and v.startswith("torch.") and
            hasattr(torch, v.removeprefix("torch.")) else v for k, v in values.items()}


def distinct(configs: list) -> dict:
    """digest -> one representative input (config key, values to resolve, skeleton) and the ids that share it."""
    out: dict = {}
    for rec in configs:
        if rec["kind"] not in ("model", "optimizer", "ddp"):
            continue
        m = map_block(rec)
        values = {k: _dtype_value(m["config"], k, v) for k, v in {**m["fields"], **m["unreleased"]}.items()}
        skel = skeleton(values) if m["config"] in ("transformer", "mla") else {}
        body = {"config": m["config"], "values": values, "skeleton": skel}
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=repr).encode()).hexdigest()[:16]
        entry = out.setdefault(digest, {**body, "ids": []})
        entry["ids"].append(rec["id"])
        rec["digest"], rec["config"], rec["mapped"] = digest, m["config"], m
    return out


# ------------------------------------------------------------------------------------------------ outcomes
def error_record(exc: Exception, skeleton_keys=(), given=()) -> dict:
    out = {"outcome": "refused", "error": type(exc).__name__, "message": str(exc).splitlines()[0][:400]}
    if isinstance(exc, UnsupportedFieldError):
        out.update(field=exc.field, value=_j(exc.value), supported_in=exc.supported_in)
    elif isinstance(exc, ConstraintError):
        out.update(rule=exc.rule, values={k: _j(v) for k, v in exc.values.items()},
                   skeleton_involved=sorted(set(exc.values) & set(skeleton_keys)),
                   defaults_involved=sorted(set(exc.values) - set(given) - set(skeleton_keys)))
    elif isinstance(exc, (FieldTypeError, InvalidValueError)):
        out.update(field=exc.field, value=_j(exc.value))
    if not isinstance(exc, CompatError):
        out["outcome"] = "untyped"
    return out


def _j(value):
    return value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else repr(value)


def resolution_record(res, given: dict) -> dict:
    renamed = {g: f.target_name for f in res.fields.values() if f.source == "user"
               for g in f.given_as if f.target_name and g != f.target_name}
    dropped = sorted(f.name for f in res.dropped)
    added = {n: {"value": _j(f.value), "source": f.source, "rule": f.rule} for n, f in res.fields.items()
             if f.source in ("resolver", "cross-config rule", "coerced")}
    outcome = "as_given" if not renamed and not dropped else "adapted"
    out = {"outcome": outcome}
    if renamed:
        out["renamed"] = renamed
    if dropped:
        out["dropped_implied"] = dropped
    if added:
        out["added"] = added
    return out


def resolve_one(entry: dict, version: str) -> dict:
    values = {**entry["values"], **entry["skeleton"]}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = compat.resolve(values, config=entry["config"], version=version)
    except CompatError as exc:
        return error_record(exc, entry["skeleton"], entry["values"])
    except Exception as exc:  # anything untyped is a finding
        return error_record(exc)
    return resolution_record(res, values)


def run_registry(data: dict) -> dict:
    entries = distinct(data["configs"])
    versions = registry().versions()
    started = time.perf_counter()
    per_entry = {d: {v: _absent_or(resolve_one, e, v) for v in versions} for d, e in entries.items()}
    per_class_s = time.perf_counter() - started
    started = time.perf_counter()
    sites = site_inputs(data["configs"], entries)
    per_site = {s: {v: resolve_site(i, v) for v in versions} for s, i in sites.items()}
    return {"versions": versions, "entries": entries, "per_entry": per_entry, "per_site": per_site,
            "overwrite_cases": overwrite_cases(data["configs"]),
            "seconds": {"per_class": round(per_class_s, 1), "per_site": round(time.perf_counter() - started, 1)},
            "load_average": _loadavg()}


def _absent_or(fn, entry, version):
    if version not in registry().versions_having(entry["config"]):
        return {"outcome": "class_absent"}
    return fn(entry, version)


def overwrite_cases(configs: list) -> list:
    """Bridge recipes whose MixedPrecisionConfig will be written over their DDP / optimizer config
    (``update_config_with_precision_overrides``: every field the config has, whatever the recipe set)."""
    by_site: dict = {}
    for rec in configs:
        by_site.setdefault((rec["project"], rec["site"]), {})[rec["kind"]] = rec
    seen, out = set(), []
    for (project, site), blocks in by_site.items():
        mp = blocks.get("mixed_precision")
        if mp is None or not mp["values"]:
            continue
        for kind in ("ddp", "optimizer"):
            rec = blocks.get(kind)
            if rec is None or "digest" not in rec:
                continue
            names = set(_canon(kind).fields)
            writes = {k: v for k, v in mp["values"].items() if k in names}
            key = (rec["digest"], json.dumps(writes, sort_keys=True))
            if writes and key not in seen:
                seen.add(key)
                out.append({"site": f"{project}::{site}", "kind": kind, "digest": rec["digest"], "writes": writes,
                            "writes_where": {k: mp["where"][k] for k in writes}})
    return out


def site_inputs(configs: list, entries: dict) -> dict:
    """(project, site) -> the digests of its ddp / optimizer / model blocks (a recipe's configs together)."""
    sites: dict = {}
    for rec in configs:
        if "digest" not in rec:
            continue
        sites.setdefault(f"{rec['project']}::{rec['site']}", {})[rec["kind"]] = rec["digest"]
    return {s: {k: entries[d] for k, d in blocks.items()} for s, blocks in sites.items()
            if len(blocks) > 1 and {"ddp", "optimizer"} <= set(blocks)}


def resolve_site(blocks: dict, version: str) -> dict:
    model = blocks.get("model")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = compat.resolve_configs(
                ddp=blocks["ddp"]["values"], optimizer=blocks["optimizer"]["values"],
                transformer={**model["values"], **model["skeleton"]} if model else None, version=version,
                transformer_config=model["config"] if model else "transformer")
    except CompatError as exc:
        return error_record(exc)
    except Exception as exc:
        return error_record(exc)
    out = {"outcome": "resolved"}
    for name, res in run.items():
        added = {n: {"value": _j(f.value), "source": f.source, "rule": f.rule} for n, f in res.fields.items()
                 if f.source in ("resolver", "cross-config rule", "coerced")}
        if added:
            out.setdefault("added", {})[name] = added
    return out


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


# ------------------------------------------------------------------------------------------------ build (pin venv)
def run_build(entries: dict, cases: list) -> dict:
    """Build every distinct config on the installed megatron-core; compare with the registry and the raw class."""
    import megatron.core  # noqa: F401  (fails loudly outside a pin venv)

    from compat import build
    from compat.kwargs import materialize
    from compat.resolution import resolve
    from compat.version import installed_version

    version = installed_version()
    out = {"version": version, "load_average": _loadavg(), "entries": {}}
    started = time.perf_counter()
    for digest, entry in entries.items():
        key = entry["config"]
        reg = _absent_or(resolve_one, entry, version)
        try:
            cls = build.megatron_class(config=key)
        except CompatError as exc:  # 0.7.0's optimizer module imports Apex; MLA starts at 0.10
            out["entries"][digest] = {"outcome": "class_absent", "why": str(exc)[:200],
                                      "registry_outcome": reg["outcome"],
                                      "agrees_with_registry": reg["outcome"] == "class_absent"}
            continue
        values = live_values({**entry["values"], **entry["skeleton"]})
        rec = _build_one(cls, key, values, entry, build, resolve, materialize)
        rec["registry_outcome"] = reg["outcome"] if reg["outcome"] != "adapted" else "adapted"
        rec["agrees_with_registry"] = _same_verdict(rec, reg)
        out["entries"][digest] = rec
    out["overwrite_audits"] = [_overwrite_audit(case, entries[case["digest"]], build, version) for case in cases]
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def _overwrite_audit(case: dict, entry: dict, build, version: str) -> dict:
    """Build the recipe's config, write the mixed-precision values over it as Bridge does, and audit it."""
    from compat.dtypes import to_torch

    values = entry["values"]
    out = {"site": case["site"], "kind": case["kind"], "digest": case["digest"]}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = build.build_config(case["kind"], values)
            res = compat.resolve(values, config=case["kind"], version=version)
    except Exception as exc:  # recorded with the build outcome already
        return {**out, "skipped": type(exc).__name__}
    overwritten = {}
    for name, value in case["writes"].items():
        if not hasattr(obj, name):
            continue
        new = to_torch(value) if value in ("float32", "bfloat16", "float16") else value
        if not _equal(getattr(obj, name), new):
            overwritten[name] = {"recipe": _j(values.get(name, "<default>")), "now": _j(value),
                                 "user_set": name in values, "where": case["writes_where"][name]}
            setattr(obj, name, new)
    diffs = compat.audit(obj, res)
    reported = sorted({d.field for d in diffs})
    out.update(overwritten=overwritten, audit_reports=reported,
               user_values_missed=sorted(n for n, o in overwritten.items() if o["user_set"] and n not in reported))
    return out


def _build_one(cls, key, values, entry, build, resolve, materialize) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            obj = build.build_config(key, values)
        except CompatError as exc:
            rec = error_record(exc, entry["skeleton"], entry["values"])
            rec["raw_class"] = _raw_class_verdict(cls, key, values, entry, exc, build, resolve, materialize)
            return rec
        except Exception as exc:  # the real class refused what the pre-check let through
            rec = error_record(exc, entry["skeleton"], entry["values"])
            rec["check"] = _matching_check(build.live_schema(cls, key), exc)
            return rec
    schema = build.live_schema(cls, key)
    res = resolve(values, schema=schema, prechecks=False)
    kwargs = build.live_values(cls, materialize(res.kwargs, res))
    mismatched = {}
    for name, value in kwargs.items():
        if name in schema.post_init_writes or schema.dynamic_writes:
            continue
        now = getattr(obj, name)
        if not _equal(now, value):
            mismatched[name] = {"passed": _j(value), "object": _j(now)}
    rewrites = [str(w.message)[:300] for w in caught if type(w.message).__name__ == "PostInitChangedWarning"]
    rec = resolution_record(res, values)
    rec["outcome"] = "built_" + rec["outcome"]
    rec["object"] = {name: shown(getattr(obj, name)) for name in sorted(kwargs)}
    if mismatched:
        rec["object_differs"] = mismatched
    if rewrites:
        rec["post_init_rewrites"] = rewrites
    return rec


def shown(value):
    """A value as JSON: torch dtypes as "torch.bfloat16", enum members as "AttnBackend.flash", tuples as lists."""
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return str(value)
    if hasattr(value, "name") and hasattr(type(value), "__members__"):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (list, tuple)):
        return [shown(v) for v in value]
    return _j(value)


def _equal(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    try:
        return bool(a == b) or a is b
    except Exception:
        return a is b


def _raw_class_verdict(cls, key, values, entry, exc, build, resolve, materialize) -> dict:
    """Our refusal, checked on the real class with only what it is about: a ConstraintError with the fields its
    check reads (as we would pass them, without our checks), a type or value error with the value as given (the
    class checks no types); each on the skeleton, so that nothing else the config sets can fail first. A refusal
    by the class is matched to the extracted check it came from."""
    schema = build.live_schema(cls, key)
    base = {k: v for k, v in values.items() if k in entry["skeleton"]}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if isinstance(exc, ConstraintError) and getattr(exc, "check", None) is None:
                kwargs = {**base, **{k: values[k] for k in exc.values if k in values}}  # a curated rules.json rule
            elif isinstance(exc, ConstraintError):
                involved = {k: values[k] for k in exc.values if k in values}
                res = resolve({**base, **involved}, schema=schema, prechecks=False)
                kwargs = materialize(res.kwargs, res)
            elif isinstance(exc, (FieldTypeError, InvalidValueError)) and exc.field in schema:
                res = resolve(base, schema=schema, prechecks=False)
                kwargs = {**materialize(res.kwargs, res), exc.field: exc.value}
            else:
                return {"verdict": "not_applicable", "why": f"{type(exc).__name__}: the build has no such field"}
    except CompatError as other:
        return {"verdict": "not_applicable", "why": f"{type(other).__name__}: {other}"[:200]}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls(**kwargs)
    except Exception as raised:
        text = str(raised).splitlines()[0][:200] if str(raised) else ""
        check = _matching_check(schema, raised)
        ours = getattr(exc, "check", None)  # None for a curated rules.json rule: no extracted check to compare
        same = None if ours is None else check.get("where") == ours.where()
        return {"verdict": "class_refuses_too", "same_check": same, "check": check,
                "exception": f"{type(raised).__name__}: {text}"}
    return {"verdict": "class_accepts", "kwargs": sorted(kwargs)}


def _matching_check(schema, exc: Exception) -> dict:
    """The extracted __post_init__ check whose message literals all occur in the exception (best match), with
    whether we pre-check it and why not."""
    text = str(exc)
    best, score = None, 0
    for check in schema.checks:
        parts = [p for p in _literals(check.message or "") if len(p) >= 6]
        if parts and all(p in text for p in parts) and sum(map(len, parts)) > score:
            best, score = check, sum(map(len, parts))
    if best is None:
        return {"matched": False}
    return {"matched": True, "where": best.where(), "kind": best.kind, "skip": best.skip, "reads": list(best.reads)}


def _literals(message_src: str) -> list:
    """The constant pieces of a message as written in the source ('...', f'...{x}...', '...' + str(x))."""
    import ast as _ast

    try:
        node = _ast.parse(message_src, mode="eval").body
    except SyntaxError:
        return [message_src]
    out = []
    for sub in _ast.walk(node):
        if isinstance(sub, _ast.Constant) and isinstance(sub.value, str):
            out += [p.strip() for p in sub.value.split("{") if p.strip()]
    return out


def _same_verdict(live: dict, reg: dict) -> bool:
    if live["outcome"] == "class_absent" or reg["outcome"] == "class_absent":
        return live["outcome"] == reg["outcome"]
    live_ok = live["outcome"].startswith("built")
    reg_ok = reg["outcome"] in ("as_given", "adapted")
    if live_ok != reg_ok:
        return False
    # a dtype object (live) and its "torch.<dtype>" marker (registry) may get different typed errors for one field
    return live_ok or (live.get("field") == reg.get("field") and live.get("rule") == reg.get("rule"))


# ------------------------------------------------------------------------------------------------ contract fixture
FIXTURE = ROOT / "tests" / "contract" / "data" / "real_configs.json"
FIXTURE_SITES = [  # (project, site, block): a handful of harvested configs that cover renames, drops and refusals
    ("NVIDIA-NeMo/Megatron-Bridge",
     "src/megatron/bridge/recipes/llama/h100/llama3.py::llama32_1b_pretrain_1gpu_h100_bf16_config", "ddp"),
    ("NVIDIA-NeMo/Megatron-Bridge",
     "src/megatron/bridge/recipes/llama/h100/llama3.py::llama32_1b_pretrain_1gpu_h100_bf16_config", "optimizer"),
    ("NVIDIA-NeMo/Megatron-Bridge",
     "src/megatron/bridge/perf_recipes/kimi/b200/kimi_k2.py::kimi_k2_pretrain_256gpu_b200_bf16_config", "optimizer"),
    ("NVIDIA-NeMo/Megatron-Bridge",
     "src/megatron/bridge/recipes/glm/h100/glm45.py::glm45_air_106b_pretrain_32gpu_h100_bf16_config", "model"),
    ("NVIDIA-NeMo/RL", "examples/configs/grpo_math_1B_megatron.yaml::policy.megatron_cfg", "ddp"),
    ("NVIDIA-NeMo/RL", "examples/configs/recipes/llm/sft-qwen2.5-math7b-2n4g-megatron.yaml::policy.megatron_cfg",
     "optimizer"),  # the precision-aware optimizer of most NeMo-RL configs needs TE, absent from the CPU pins
    ("volcengine/verl", "verl/trainer/config/engine/megatron.yaml::override_transformer_config", "model"),
    ("volcengine/verl", "examples/grpo_trainer/run_deepseek671b_math_megatron_80gb.sh::"
     "actor_rollout_ref.actor.megatron.override_transformer_config", "model"),
]


def write_fixture(data: dict, reg: dict, builds: dict) -> dict:
    """The FIXTURE_SITES configs with, per pin, the outcome the live class gave (checked equal to the registry's)."""
    distinct(data["configs"])
    cases = []
    for project, site, kind in FIXTURE_SITES:
        rec = next(r for r in data["configs"] if (r["project"], r["site"], r["kind"]) == (project, site, kind))
        entry = reg["entries"][rec["digest"]]
        expected = {}
        for version in PIN_VERSIONS:
            live = builds[version]["entries"][rec["digest"]]
            if live["outcome"] == "untyped" or not live["agrees_with_registry"] and live["outcome"] != "class_absent":
                raise SystemExit(f"{site} {kind} on {version}: {live['outcome']} does not make a stable fixture")
            if live["outcome"] == "class_absent":
                expected[version] = {"outcome": "class_absent"}
            elif live["outcome"] == "refused":
                expected[version] = {"outcome": "refused", "error": live["error"],
                                     **({"field": live["field"]} if "field" in live else {"rule": live["rule"]})}
            else:
                expected[version] = {"outcome": "built", "object": live["object"],
                                     "renamed": live.get("renamed", {}), "dropped": live.get("dropped_implied", [])}
        where, _sep, name = site.partition("::")
        cases.append({"id": f"{_short_project(project)}-{Path(where).stem}-{name.rsplit('.', 1)[-1]}-{kind}",
                      "source": {"project": project, "commit": rec["commit"], "site": site, "file": rec["file"],
                                 "line": rec["line"], "where": rec["where"]},
                      "config": entry["config"], "values": entry["values"], "skeleton": entry["skeleton"],
                      "wrapper_only": rec["mapped"]["wrapper_only"], "expected": expected})
    return {"what": "harvested configs with the outcome each pinned megatron-core gave (benchmarks/real_configs.py "
                    "fixture); tests/contract/test_real_configs.py checks them on the session's pin",
            "configs": cases}


def _short_project(project: str) -> str:
    return {"NVIDIA-NeMo/Megatron-Bridge": "bridge", "NVIDIA-NeMo/RL": "nemo_rl", "volcengine/verl": "verl"}[project]


# ------------------------------------------------------------------------------------------------ CLI
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("step", choices=["harvest", "registry", "build", "report", "fixture", "all"])
    add_mirror_option(p)
    p.add_argument("--work", type=Path, default=WORK)
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step in ("harvest", "all"):
        data = harvest(mirror_root(args.mirror))
        _write(HARVEST, data)
        print(f"harvested {len(data['configs'])} configs -> {HARVEST}")
    if args.step in ("registry", "all"):
        data = json.loads(HARVEST.read_text())
        reg = run_registry(data)
        _write(args.work / "registry.json", reg)
        print(f"registry: {len(reg['entries'])} distinct configs x {len(reg['versions'])} releases, "
              f"{len(reg['per_site'])} sites, {reg['seconds']}")
    if args.step == "build":
        reg = json.loads((args.work / "registry.json").read_text())
        result = run_build(reg["entries"], reg["overwrite_cases"])
        _write(args.work / f"build-{result['version']}.json", result)
        print(f"built on {result['version']} in {result['seconds']} s")
    if args.step == "all":
        for venv in sorted((ROOT / ".nox").glob("mcore-*")):
            subprocess.run([str(venv / "bin" / "python"), __file__, "build", "--work", str(args.work)], check=True,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    if args.step in ("fixture", "all"):
        builds = {json.loads(f.read_text())["version"]: json.loads(f.read_text())
                  for f in args.work.glob("build-*.json")}
        reg = json.loads((args.work / "registry.json").read_text())
        _write(FIXTURE, write_fixture(json.loads(HARVEST.read_text()), reg, builds))
        print(f"fixture -> {FIXTURE}")
    if args.step in ("report", "all"):
        from real_configs_report import write_report

        write_report(json.loads(HARVEST.read_text()), args.work, RESULTS)
    return 0


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False, default=repr) + "\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    raise SystemExit(main())
