"""Figures and findings of ``benchmarks/real_configs.py``: ``real_configs.json`` (everything counted) and
``real_configs.md`` (the tables and the findings with file:line)."""
from __future__ import annotations

import collections
import json
import os
from pathlib import Path

from benchmarks.real_configs import PIN_VERSIONS, _canon
from compat.registry import describe_range, registry

NEWEST = PIN_VERSIONS[-1]
SHOW = 12  # rows per finding table in the markdown
KEEP = 40  # rows per list in the JSON (each list says how many there were)
ENVIRONMENT = ("install TE", "TransformerEngine", "Transformer Engine", "Apex", "apex", "not available",
               "not installed", "cannot import name",  # a TE-only kernel imported by __post_init__
               "'NoneType' and 'Version'")  # Megatron comparing the TE version it could not read


# ------------------------------------------------------------------------------------------------ loading
def load(work: Path) -> tuple[dict, dict]:
    reg = json.loads((work / "registry.json").read_text())
    builds = {}
    for path in sorted(work.glob("build-*.json")):
        data = json.loads(path.read_text())
        builds[data["version"]] = data
    return reg, builds


def _records_by_digest(configs: list) -> dict:
    out = collections.defaultdict(list)
    for rec in configs:
        if "digest" in rec:
            out[rec["digest"]].append(rec)
    return out


def _where(rec: dict, keys) -> str:
    for k in keys:
        if k in rec["where"]:
            return rec["where"][k]
    return f"{rec['file']}:{rec['line']}"


def _short(project: str) -> str:
    return {"NVIDIA-NeMo/Megatron-Bridge": "Bridge", "NVIDIA-NeMo/RL": "NeMo-RL", "volcengine/verl": "verl"}[project]


# ------------------------------------------------------------------------------------------------ sections
def harvest_summary(data: dict, reg: dict) -> dict:
    out = {}
    for project, meta in data["projects"].items():
        recs = [r for r in data["configs"] if r["project"] == project]
        kinds = collections.Counter(r["kind"] for r in recs)
        classes = collections.Counter(r.get("config", r["kind"]) for r in recs)
        out[project] = {
            "commit": meta["commit"], "harvest_seconds": meta["seconds"], "configs": len(recs),
            "by_kind": dict(kinds), "by_class": dict(classes),
            "distinct": len({r["digest"] for r in recs if "digest" in r}),
            "keys_harvested": sum(len(r["values"]) for r in recs),
            "keys_unevaluated": sum(len(r["unevaluated"]) for r in recs),
            "keys_conditional": sum(len(r["conditional"]) for r in recs),
            "sites": len({r["site"] for r in recs}),
            **({"interpreter": meta["interpreter"]} if "interpreter" in meta else {}),
        }
    return out


def key_split(data: dict) -> dict:
    """Per project and class: released fields, unreleased (main/dev) fields and wrapper-only keys."""
    out: dict = {}
    for rec in data["configs"]:
        if "mapped" not in rec:
            continue
        m = rec["mapped"]
        slot = out.setdefault(rec["project"], {}).setdefault(m["config"], {
            "configs": 0, "field_keys": 0, "unreleased_keys": 0, "wrapper_only_keys": 0,
            "wrapper_only": {}, "unreleased": {}})
        slot["configs"] += 1
        slot["field_keys"] += len(m["fields"])
        slot["unreleased_keys"] += len(m["unreleased"])
        slot["wrapper_only_keys"] += len(m["wrapper_only"])
        for part in ("wrapper_only", "unreleased"):
            for name, value in m[part].items():
                e = slot[part].setdefault(name, {"configs": 0, "where": rec["where"].get(name), "values": []})
                e["configs"] += 1
                if value not in e["values"] and len(e["values"]) < 4:
                    e["values"].append(value)
    for per_class in out.values():
        for slot in per_class.values():
            for part in ("wrapper_only", "unreleased"):
                slot[part] = dict(sorted(slot[part].items(), key=lambda kv: -kv[1]["configs"]))
    return out


def _verdict(r: dict, wrapper_writes=frozenset()) -> str:
    """``wrapper_writes``: fields the site's wrapper writes over the config before Megatron checks it (Bridge's
    MixedPrecisionConfig: pipeline_dtype, fp8, ...); a check reading one of them needs that base too."""
    if r["outcome"] in ("as_given", "adapted", "class_absent"):
        return r["outcome"]
    if r["outcome"] == "untyped":
        return "untyped"
    if r["error"] == "ConstraintError" and (r.get("skeleton_involved") or r.get("defaults_involved")
                                            or set(r.get("values", {})) & wrapper_writes):
        return "refused_needs_base"
    return "refused_own_values"


def _wrapper_writes(data: dict) -> dict:
    """(project, site) -> the fields its Bridge MixedPrecisionConfig writes (model/optimizer/DDP alike)."""
    return {(r["project"], r["site"]): frozenset(r["values"]) for r in data["configs"]
            if r["kind"] == "mixed_precision"}


def registry_outcomes(data: dict, reg: dict) -> dict:
    """Per class and release: how many harvested configs resolve as given, adapted, refused (by error class)."""
    by_digest, writes = _records_by_digest(data["configs"]), _wrapper_writes(data)
    out: dict = {}
    for digest, per_version in reg["per_entry"].items():
        key = reg["entries"][digest]["config"]
        for version, r in per_version.items():
            slot = out.setdefault(key, {}).setdefault(version, collections.Counter())
            for rec in by_digest[digest]:
                slot[_verdict(r, writes.get((rec["project"], rec["site"]), frozenset()))] += 1
                if r["outcome"] == "refused":
                    slot[f"error:{r['error']}"] += 1
    return {k: {v: dict(c) for v, c in per.items()} for k, per in out.items()}


def adaptations(data: dict, reg: dict) -> dict:
    by_digest = _records_by_digest(data["configs"])
    renames, drops = collections.Counter(), collections.Counter()
    rename_versions, drop_versions = collections.defaultdict(set), collections.defaultdict(set)
    for digest, per_version in reg["per_entry"].items():
        weight = len(by_digest[digest])
        for version, r in per_version.items():
            for given, sent in r.get("renamed", {}).items():
                renames[(given, sent)] += weight
                rename_versions[(given, sent)].add(version)
            for name in r.get("dropped_implied", []):
                drops[name] += weight
                drop_versions[name].add(version)
    among = registry().versions()
    return {"renamed": [{"given": g, "sent_as": s, "config_releases": n,
                         "releases": describe_range(sorted(rename_versions[(g, s)], key=among.index), among)}
                        for (g, s), n in renames.most_common()],
            "dropped_implied": [{"field": f, "config_releases": n,
                                 "releases": describe_range(sorted(drop_versions[f], key=among.index), among)}
                                for f, n in drops.most_common()]}


def refusals(data: dict, reg: dict, version: str) -> list:
    """Distinct refusals on ``version`` (by error, field or rule, and message), with the configs and sites."""
    by_digest, writes = _records_by_digest(data["configs"]), _wrapper_writes(data)
    groups: dict = {}
    for digest, per_version in reg["per_entry"].items():
        r = per_version.get(version, {})
        if r.get("outcome") != "refused":
            continue
        head = r["message"].split(": ", 1)[-1] if r["error"] == "ConstraintError" else r["message"]
        for rec in by_digest[digest]:
            site_writes = writes.get((rec["project"], rec["site"]), frozenset())
            key = (r["error"], r.get("field") or r.get("rule"), head[:160], _verdict(r, site_writes))
            g = groups.setdefault(key, {"error": r["error"], "field_or_rule": key[1], "message": r["message"][:300],
                                        "verdict": key[3], "configs": 0, "projects": collections.Counter(),
                                        "sites": [], "supported_in": r.get("supported_in"),
                                        "involved_unset": r.get("defaults_involved", []),
                                        "involved_skeleton": r.get("skeleton_involved", []),
                                        "involved_wrapper_writes": sorted(set(r.get("values", {})) & site_writes)})
            g["configs"] += 1
            g["projects"][_short(rec["project"])] += 1
            if len(g["sites"]) < 3:
                keys = [r["field"]] if r.get("field") else list(r.get("values", {}))
                g["sites"].append(f"{_where(rec, keys)} ({rec['site'].split('::')[-1]})")
    out = sorted(groups.values(), key=lambda g: (g["verdict"] != "refused_own_values", -g["configs"]))
    for g in out:
        g["projects"] = dict(g["projects"])
    return out


def pin_builds(data: dict, reg: dict, builds: dict) -> dict:
    by_digest = _records_by_digest(data["configs"])
    out = {}
    for version, b in sorted(builds.items(), key=lambda kv: registry().versions().index(kv[0])):
        counts, untyped, type_policy, false_refusals, differs, disagree = (
            collections.Counter(), {}, {}, [], [], [])
        for digest, r in b["entries"].items():
            weight = len(by_digest[digest])
            entry = reg["entries"][digest]
            label = r["outcome"] if r["outcome"] != "refused" else f"refused:{r['error']}"
            if r["outcome"] == "class_absent" and r.get("registry_outcome") != "class_absent":
                label = "not_importable"  # 0.7.0's optimizer module imports Apex
            counts[label] += weight
            raw = r.get("raw_class", {}).get("verdict")
            if raw:
                counts[f"raw_class:{raw}"] += weight
            if r.get("error") == "ConstraintError" and raw == "class_refuses_too":
                same = r["raw_class"].get("same_check")
                counts["constraint_class_same_check" if same else "constraint_class_refuses_curated_rule"
                       if same is None else "constraint_class_other_check"] += weight
            if r["outcome"] == "refused" and r["error"] == "ConstraintError" and raw == "class_accepts":
                false_refusals.append({"digest": digest, "message": r["message"],
                                       "site": by_digest[digest][0]["site"]})
            if r["outcome"] == "refused" and r["error"] in ("FieldTypeError", "InvalidValueError") and \
                    raw == "class_accepts":
                key = (r["field"], json.dumps(r.get("value")))
                e = type_policy.setdefault(key, {"field": r["field"], "value": r.get("value"), "configs": 0,
                                                 "sites": []})
                e["configs"] += weight
                for rec in by_digest[digest][:2]:
                    if len(e["sites"]) < 3:
                        e["sites"].append(f"{_where(rec, [r['field']])} ({rec['site'].split('::')[-1]})")
            if r["outcome"] == "untyped":
                category = _untyped_category(r, entry)
                counts[f"untyped:{category}"] += weight
                check = r.get("check") or {}
                counts["untyped_from_a_prechecked_check" if check.get("matched") and check.get("skip") is None
                       else "untyped_from_a_skipped_check" if check.get("matched") else "untyped_outside_the_checks"] \
                    += weight
                key = (r["message"][:90], (r.get("check") or {}).get("where"))
                e = untyped.setdefault(key, {"message": r["message"][:200], "category": category,
                                             "check": r.get("check"), "configs": 0, "sites": []})
                e["configs"] += weight
                if len(e["sites"]) < 2:
                    rec = by_digest[digest][0]
                    e["sites"].append(f"{rec['file']}:{rec['line']} ({rec['site'].split('::')[-1]})")
            if r.get("object_differs"):
                differs.append({"digest": digest, "fields": r["object_differs"]})
            if not r.get("agrees_with_registry") and r["outcome"] not in ("untyped", "class_absent"):
                if _dtype_marker_first(r, entry):
                    counts["refused_first_on_a_dtype_object"] += weight
                else:
                    disagree.append({"digest": digest, "live": r["outcome"], "registry": r.get("registry_outcome"),
                                     "message": r.get("message", "")[:200]})
        audits = b.get("overwrite_audits", [])
        out[version] = {
            "distinct_configs": len(b["entries"]), "seconds": b["seconds"],
            "load_average": " ".join(b["load_average"].split()[:3]),
            "outcomes": dict(counts), "false_refusals": false_refusals,
            "type_policy": sorted(type_policy.values(), key=lambda e: -e["configs"]),
            "untyped": sorted(untyped.values(), key=lambda e: -e["configs"]),
            "object_differs": differs, "live_vs_registry_disagreements": disagree,
            "overwrite_audits": _audit_summary(audits),
        }
    return out


def _dtype_marker_first(live: dict, entry: dict) -> bool:
    """Both refused, the live build first on a field the project gives a torch dtype object: the registry run
    sees that value as its "torch.<dtype>" string, which an Optional[str] field takes, and refuses a later key."""
    value = entry["values"].get(live.get("field"))
    return live["outcome"] == "refused" and isinstance(value, str) and value.startswith("torch.")


def _untyped_category(r: dict, entry: dict) -> str:
    message = r["message"]
    if any(word in message for word in ENVIRONMENT):
        return "environment"
    check = r.get("check") or {}
    reads = set(check.get("reads", []))
    if reads & set(entry["skeleton"]) or any(k in message for k in entry["skeleton"]) or \
            "decoder layers" in message:
        return "needs_base"
    return "own_values"


def _audit_summary(audits: list) -> dict:
    ran = [a for a in audits if "skipped" not in a]
    user_overwrites = [(a, n, o) for a in ran for n, o in a["overwritten"].items() if o["user_set"]]
    return {"cases": len(audits), "built": len(ran),
            "with_overwrites": sum(1 for a in ran if a["overwritten"]),
            "fields_overwritten": sum(len(a["overwritten"]) for a in ran),
            "user_set_values_overwritten": len(user_overwrites),
            "audit_reported_fields": sum(len(a["audit_reports"]) for a in ran),
            "user_set_values_missed_by_audit": sum(len(a["user_values_missed"]) for a in ran),
            "user_overwrites": [{"site": a["site"], "kind": a["kind"], "field": n, **o}
                                for a, n, o in user_overwrites]}


def site_rules(reg: dict) -> dict:
    """resolve_configs per recipe (ddp + optimizer + model together): resolved or not, fields the rules added."""
    out = {}
    for version in PIN_VERSIONS:
        counts, added = collections.Counter(), collections.Counter()
        for per_version in reg["per_site"].values():
            r = per_version[version]
            counts[r["outcome"] if r["outcome"] != "refused" else f"refused:{r['error']}"] += 1
            for config, fields in r.get("added", {}).items():
                for name, f in fields.items():
                    added[(config, name, json.dumps(f["value"]), f["source"], f["rule"])] += 1
        out[version] = {"sites": dict(counts), "added": [
            {"config": c, "field": n, "value": json.loads(v), "source": s, "rule": rule, "sites": k}
            for (c, n, v, s, rule), k in added.most_common()]}
    return out


def default_drift(data: dict) -> list:
    """Fields a config leaves unset whose megatron-core default differs between pinned releases that have it
    (what ``explain`` shows as source megatron-default, per release)."""
    reg = registry()
    out = []
    for key in ("ddp", "optimizer", "transformer", "mla"):
        history: dict = {}
        for version in PIN_VERSIONS:
            if version not in reg.versions_having(key):
                continue
            for f in reg.schema(version, config=key).fields:
                history.setdefault(f.name, []).append((version, f.default_text, f.default if f.exact else
                                                       f.default_text))
        recs = [r for r in data["configs"] if r.get("config") == key]
        for name, seen in history.items():
            if all(_same(seen[0][2], value) for _v, _t, value in seen[1:]):
                continue
            unset = [r for r in recs if name not in r["values"] and name not in r["unevaluated"]
                     and name not in r["conditional"]]
            if not unset:
                continue
            moe = [r for r in unset if _is_moe(r)]
            changes = [seen[0]] + [b for a, b in zip(seen, seen[1:]) if not _same(a[2], b[2])]
            out.append({"config": key, "field": name, "defaults": [f"{v}: {t}" for v, t, _value in changes],
                        "configs_relying": len(unset), "moe_configs_relying": len(moe),
                        "by_project": dict(collections.Counter(_short(r["project"]) for r in unset))})
    return sorted(out, key=lambda e: -e["configs_relying"])


def _is_moe(rec: dict) -> bool:
    """Expert parallelism or experts set: the block is certainly MoE (others may be, from their checkpoint)."""
    v = rec["values"]
    ep = v.get("expert_model_parallel_size")
    return bool(v.get("num_moe_experts")) or (isinstance(ep, int) and not isinstance(ep, bool) and ep > 1)


def wrapper_values(data: dict) -> list:
    """Values a config gets from wrapper code or a base file rather than its own file, that differ from
    megatron-core's default on the newest pin: the wrapper's defaults."""
    reg = registry()
    groups: dict = {}
    for rec in data["configs"]:
        key = rec.get("config")
        if key is None:
            continue
        own = rec["site"].split("::")[0]
        schema = reg.schema(NEWEST, config=key)
        for name, value in rec["values"].items():
            where = rec["where"].get(name, "")
            if where.rsplit(":", 1)[0] == own or name not in schema:
                continue
            f = schema.get(name)
            default = f.default if f.exact else f.default_text
            if _same(value, default):
                continue
            g = groups.setdefault((rec["project"], key, name, json.dumps(value, default=repr), where), {
                "project": _short(rec["project"]), "config": key, "field": name, "value": value,
                "megatron_default": default, "where": where, "configs": 0})
            g["configs"] += 1
    return sorted(groups.values(), key=lambda g: -g["configs"])


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    if isinstance(b, str) and b.startswith("torch."):
        return a == b.removeprefix("torch.")
    return a == b


def provider_defaults(data: dict) -> list:
    """Class-level defaults of Bridge's providers and config subclasses that differ from megatron-core's."""
    reg = registry()
    groups: dict = {}
    for cls in data["wrapper_defaults"]:
        for name, d in cls["defaults"].items():
            for key in ("transformer", "mla", "optimizer", "ddp"):
                f = reg.schema(NEWEST, config=key).get(name)
                if f is None:
                    continue
                default = f.default if f.exact else f.default_text
                if not _same(d["value"], default):
                    g = groups.setdefault((name, json.dumps(d["value"], default=repr)), {
                        "field": name, "value": d["value"], "megatron_default": default, "config": key,
                        "classes": 0, "example": f"{cls['class']} {cls['file']}:{d['line']}"})
                    g["classes"] += 1
                break
    return sorted(groups.values(), key=lambda g: -g["classes"])


def yaml_typing(data: dict) -> list:
    """Scalars plain PyYAML types differently from OmegaConf (1e-8 is a str for PyYAML), and what the API says."""
    import warnings

    import compat

    out, seen = [], set()
    for note in data["yaml_typing"]:
        key = (note["kind"], note["key"], json.dumps(note["plain_yaml"]))
        config = {"model": "transformer"}.get(note["kind"], note["kind"])
        if key in seen or note["key"] not in _canon(config).fields:
            continue
        seen.add(key)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compat.resolve({note["key"]: note["plain_yaml"]}, config=config, version=NEWEST, prechecks=False)
            verdict = "accepted"
        except compat.CompatError as exc:
            verdict = f"{type(exc).__name__}: {str(exc)[:160]}"
        count = sum(1 for n in data["yaml_typing"] if (n["kind"], n["key"], json.dumps(n["plain_yaml"])) == key)
        out.append({"project": _short(note["project"]), "field": note["key"], "omegaconf": note["omegaconf"],
                    "plain_yaml": note["plain_yaml"], "places": count, "example": note["where"],
                    "api_with_plain_yaml_value": verdict})
    return out


def forwarding(data: dict) -> list:
    """NeMo-RL's DDP block: the YAML keys its code passes to DistributedDataParallelConfig and those it does not
    (never passed, or replaced by a hard-coded value: with how many configs set a different value)."""
    out = []
    for call in data.get("forwarding", {}).get("NVIDIA-NeMo/RL", []):
        passed = set(call["forwarded"].values()) | set(call["other"])
        keys: dict = {}
        for rec in data["configs"]:
            if rec["project"] == "NVIDIA-NeMo/RL" and rec["kind"] == "ddp":
                for k, value in rec["values"].items():
                    e = keys.setdefault(k, {"configs": 0, "example": rec["where"][k], "values": [],
                                            "differ_from_hard_coded": 0})
                    e["configs"] += 1
                    if value not in e["values"]:
                        e["values"].append(value)
                    if k in call["constant"] and value != call["constant"][k]:
                        e["differ_from_hard_coded"] += 1
        out.append({"call": f"{call['file']}:{call['line']}", "forwarded": call["forwarded"],
                    "via_local": call["other"], "hard_coded": call["constant"],
                    "yaml_keys_not_passed": {k: e for k, e in keys.items() if k not in passed and
                                             k not in call["constant"]},
                    "yaml_keys_hard_coded": {k: {**e, "hard_coded": call["constant"][k]} for k, e in keys.items()
                                             if k in call["constant"]}})
    return out


def verl_drops(data: dict, reg: dict) -> list:
    """verl's check_and_construct_configs drops every key its installed TransformerConfig lacks (a warning);
    per key and pin: what verl drops, and whether the API drops it too (the value equals the build's behaviour)
    or refuses it (the value would be lost)."""
    recs = [r for r in data["configs"] if r["project"] == "volcengine/verl" and r.get("config") in
            ("transformer", "mla")]
    rows: dict = {}
    for version in PIN_VERSIONS:
        for rec in recs:
            schema = registry().schema(version, config=rec["config"]) if version in registry().versions_having(
                rec["config"]) else None
            if schema is None:
                continue
            canon = _canon(rec["config"])
            for name, value in rec["mapped"]["fields"].items():
                if name in schema or canon.old_name_in(name, schema):
                    continue
                row = rows.setdefault((name, json.dumps(value)), {"field": name, "value": value,
                                                                   "verl_drops_on": [], "api": {}})
                if version not in row["verl_drops_on"]:
                    row["verl_drops_on"].append(version)
                implied, _exact = canon.implied(name, version)
                row["api"][version] = "dropped (equals the build's behaviour)" if implied == value else \
                    f"UnsupportedFieldError (exists in {canon.supported_in(name)})"
            for name, value in rec["mapped"]["wrapper_only"].items():
                row = rows.setdefault((name, json.dumps(value)), {"field": name, "value": value,
                                                                   "verl_drops_on": [], "api": {}})
                if version not in row["verl_drops_on"]:
                    row["verl_drops_on"].append(version)
                row["api"][version] = "not a field of any release (wrapper-only, not passed)"
    out = []
    for row in rows.values():
        lost = sorted({v for v, a in row["api"].items() if a.startswith("UnsupportedFieldError")},
                      key=PIN_VERSIONS.index)
        out.append({"field": row["field"], "value": row["value"],
                    "verl_drops_on": describe_range(row["verl_drops_on"], PIN_VERSIONS),
                    "api_refuses_on": describe_range(lost, PIN_VERSIONS) if lost else "",
                    "api": row["api"][row["verl_drops_on"][-1]]})
    return out


# ------------------------------------------------------------------------------------------------ writing
def write_report(data: dict, work: Path, results: Path) -> None:
    import real_configs as rc

    rc.distinct(data["configs"])  # sets digest / config / mapped on each record
    reg, builds = load(work)
    report = {
        "what": "configs harvested from Megatron-Bridge recipes, NeMo-RL and verl, run through the config API",
        "script": "benchmarks/real_configs.py",
        "projects": harvest_summary(data, reg),
        "registry_run": {"releases": reg["versions"], "distinct_configs": len(reg["entries"]),
                         "recipe_sites": len(reg["per_site"]), "seconds": reg["seconds"],
                         "load_average": " ".join(reg["load_average"].split()[:3])},
        "keys": key_split(data),
        "registry_outcomes": registry_outcomes(data, reg),
        "adaptations": adaptations(data, reg),
        "refusals": {v: _capped(refusals(data, reg, v), 15) for v in PIN_VERSIONS},
        "pins": pin_builds(data, reg, builds),
        "resolve_configs": site_rules(reg),
        "default_drift": default_drift(data),
        "wrapper_values": _capped(wrapper_values(data)),
        "provider_defaults": _capped(provider_defaults(data)),
        "yaml_typing": yaml_typing(data),
        "nemo_rl_ddp_forwarding": forwarding(data),
        "verl_key_drops": verl_drops(data, reg),
    }
    _atomic(results / "real_configs.json", json.dumps(report, indent=1, default=repr) + "\n")
    try:
        from real_configs_markdown import markdown
    except ImportError:
        return
    _atomic(results / "real_configs.md", markdown(report))


def _capped(rows: list, keep: int = KEEP) -> dict:
    return {"total": len(rows), "shown": rows[:keep]}


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
