"""``real_configs.md`` from the report dict of ``real_configs_report.py``."""
from __future__ import annotations

import json

from benchmarks.real_configs import PIN_VERSIONS

SHOW = 12


def _v(value) -> str:
    text = json.dumps(value, default=repr) if not isinstance(value, str) else repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"`{text}`".replace("|", "\\|")


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(head: list, rows: list) -> list:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def markdown(r: dict) -> str:
    lines = ["# Real configs through the config API", "",
             "Reproduce: `python -m benchmarks.real_configs all`.", "",
             "Configs harvested statically from Megatron-Bridge recipes, NeMo-RL example YAML and verl YAML/scripts "
             "(snapshots below), run through `compat.resolve` / `compat.resolve_configs` on every registry release "
             "and built with `compat.build_*_config` on every pinned megatron-core (CPU venvs of the nox matrix). "
             f"Made by `{r['script']}` (`all`); numbers in `real_configs.json`.", ""]
    lines += _summary(r) + _harvest(r) + _outcomes(r) + _pins(r) + _findings(r)
    return "\n".join(lines).rstrip() + "\n"


def _harvest(r: dict) -> list:
    out = ["## What was harvested", ""]
    rows = []
    for project, p in r["projects"].items():
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(p["by_kind"].items()))
        rows.append([project, p["commit"][:10], p["sites"], p["configs"], kinds, p["distinct"], p["keys_harvested"],
                     p["keys_unevaluated"], p["keys_conditional"]])
    out += _table(["project", "commit", "sites", "configs", "by block", "distinct (ddp/opt/model)",
                   "keys with a value", "unevaluated (left out)", "conditional (left out)"], rows)
    bridge = r["projects"].get("NVIDIA-NeMo/Megatron-Bridge", {}).get("interpreter", {})
    out += [f"A site is a recipe function (Bridge), a config file's `megatron_cfg` (NeMo-RL), a YAML block or a "
            f"script's Hydra overrides (verl). Bridge's recipes were run symbolically ({bridge.get('calls_followed')} "
            f"calls into Bridge's own helpers followed, {bridge.get('calls_not_followed')} calls not followed: "
            "HF loading, runtime probes); a key whose value needs one of those, or that a branch on a runtime value "
            "may change, is left out and counted. `mixed_precision` blocks are Bridge's MixedPrecisionConfig, used "
            "for the overwrite check below, not resolved.", ""]
    rows = []
    for project, per_class in r["keys"].items():
        for config, s in per_class.items():
            top = ", ".join(f"`{k}` ({v['configs']})" for k, v in list(s["wrapper_only"].items())[:6])
            rows.append([project.split("/")[-1], config, s["configs"], s["field_keys"], s["unreleased_keys"],
                         s["wrapper_only_keys"], top or "-"])
    out += ["### Keys: fields of the class vs wrapper-only", ""]
    out += _table(["project", "class", "configs", "field keys", "unreleased-field keys (main/dev only)",
                   "wrapper-only keys", "most common wrapper-only keys (configs)"], rows)
    out += ["Wrapper-only: no release of the class has the key (nor an old name of one, nor Megatron-LM main/dev). "
            "These are what a stack must not pass to the Megatron class; they are left out before resolving.", ""]
    unreleased = {}
    for per_class in r["keys"].values():
        for config, s in per_class.items():
            for name, e in s["unreleased"].items():
                u = unreleased.setdefault((config, name), {"configs": 0, "where": e["where"], "values": e["values"]})
                u["configs"] += e["configs"]
    if unreleased:
        out += ["Fields only Megatron-LM main/dev has (from `compat/data/heads.json`), set by the configs:", ""]
        out += _table(["class", "field", "configs", "values", "example"],
                      [[c, f"`{n}`", u["configs"], ", ".join(_v(x) for x in u["values"]), u["where"]]
                       for (c, n), u in sorted(unreleased.items(), key=lambda kv: -kv[1]["configs"])])
    return out


def _outcomes(r: dict) -> list:
    run = r["registry_run"]
    out = ["## Registry: every config on every release", "",
           f"{run['distinct_configs']} distinct configs x {len(run['releases'])} releases "
           f"({run['seconds']['per_class']} s), and the {run['recipe_sites']} sites with DDP + optimizer (+ model) "
           f"blocks together with `resolve_configs` ({run['seconds']['per_site']} s), load average "
           f"{run['load_average']}. Counts are harvested configs (a distinct config counts once per site using it). "
           "Columns: *as given* (the release takes every key under its name); *adapted* (a rename or a drop of a "
           "value equal to the release's behaviour); *refused, own values* (a typed error caused by the keys the "
           "config sets); *refused, needs base* (a `__post_init__` check that also reads a field the block leaves to "
           "its checkpoint, its wrapper or the skeleton, or one Bridge's MixedPrecisionConfig writes over it before "
           "Megatron's checks run); *absent* (no MLATransformerConfig "
           "before 0.10).", ""]
    for config, per_version in r["registry_outcomes"].items():
        rows = []
        for version in PIN_VERSIONS:
            c = per_version.get(version, {})
            errors = ", ".join(f"{k.split(':')[1]} {n}" for k, n in sorted(c.items()) if k.startswith("error:"))
            rows.append([version, c.get("as_given", 0), c.get("adapted", 0), c.get("refused_own_values", 0),
                         c.get("refused_needs_base", 0), c.get("class_absent", 0), errors or "-"])
        out += [f"### {config}", ""]
        out += _table(["release", "as given", "adapted", "refused, own values", "refused, needs base", "absent",
                       "typed errors"], rows)
    a = r["adaptations"]
    out += ["### Adaptations", ""]
    out += _table(["given", "sent as", "config x releases", "releases"],
                  [[f"`{e['given']}`", f"`{e['sent_as']}`", e["config_releases"], e["releases"]]
                   for e in a["renamed"]])
    out += _table(["dropped (equals the release's behaviour)", "config x releases", "releases"],
                  [[f"`{e['field']}`", e["config_releases"], e["releases"]] for e in a["dropped_implied"][:SHOW]])
    rows = []
    for version in PIN_VERSIONS:
        s = r["resolve_configs"][version]
        added = "; ".join(f"{e['config']}.{e['field']}={e['value']!r} ({e['source']}) x{e['sites']}"
                          for e in s["added"][:4])
        rows.append([version, s["sites"].get("resolved", 0),
                     sum(n for k, n in s["sites"].items() if k != "resolved"), added or "-"])
    out += ["### `resolve_configs` per recipe (DDP x optimizer x model)", ""]
    out += _table(["release", "sites resolved", "sites refused (any class)", "values the rules added (sites)"], rows)
    return out


def _pins(r: dict) -> list:
    out = ["## Real objects on every pin", "",
           "`compat.build_config(<class>, values)` in each pin's nox venv (torch CPU, no Transformer Engine or Apex). "
           "For each typed refusal the real class is also called without our checks (a `ConstraintError`: the "
           "kwargs we would pass; a type or value error: the value as given): *false refusal* = the class accepts what "
           "a pre-check refused. Built objects are compared field by field with what was passed. A real-class error "
           "the pre-check did not see is matched to the extracted check it came from and classed: *environment* (TE, "
           "Apex or CUDA missing on this CPU venv), *needs base* (involves a skeleton field), *own values*.", ""]
    rows = []
    for version, p in r["pins"].items():
        o = p["outcomes"]
        typed = sum(n for k, n in o.items() if k.startswith("refused:"))
        rows.append([version, p["distinct_configs"], o.get("built_as_given", 0), o.get("built_adapted", 0),
                     o.get("not_importable", 0), typed,
                     o.get("raw_class:class_refuses_too", 0), len(p["false_refusals"]),
                     sum(e["configs"] for e in p["type_policy"]),
                     o.get("untyped:environment", 0), o.get("untyped:needs_base", 0), o.get("untyped:own_values", 0),
                     len(p["object_differs"]), len(p["live_vs_registry_disagreements"]),
                     f"{p['seconds']} s (load {p['load_average'].split()[0]})"])
    out += _table(["pin", "distinct", "built as given", "built adapted", "class not importable", "typed refusals",
                   "class refuses too",
                   "false refusals", "type policy (class accepts)", "untyped: environment", "untyped: needs base",
                   "untyped: own values", "object differs", "live vs registry", "build time (659 configs)"], rows)
    out += ["Counts are harvested configs except *distinct*, *false refusals*, *object differs* and *live vs registry* "
            "(distinct configs). *class not importable*: 0.7.0's `megatron.core.optimizer` imports Apex, so no "
            "OptimizerConfig can be built there (the registry resolves them). *class refuses too*: the real class, "
            "given only what the refusal is about, raises from the same extracted check (every ConstraintError) or "
            "fails otherwise (type refusals). *live vs registry*: the pin's registry entry and its live class gave "
            "a different verdict; not counted there: "
            f"{sum(p['outcomes'].get('refused_first_on_a_dtype_object', 0) for p in r['pins'].values())} "
            "config-pins refused on both sides but first on a field the project gives a torch dtype object "
            "(`moe_router_dtype=torch.float32`), which the registry run sees as a string.", ""]
    newest = r["pins"].get(PIN_VERSIONS[-1])
    if newest:
        out += [f"### Real-class errors the pre-check does not see ({PIN_VERSIONS[-1]})", ""]
        out += _table(["configs", "class", "message", "check", "why not pre-checked", "example"],
                      [[e["configs"], e["category"], e["message"][:110], (e["check"] or {}).get("where", "no match"),
                        (e["check"] or {}).get("skip") or "-", e["sites"][0] if e["sites"] else ""]
                       for e in newest["untyped"][:SHOW]])
    return out


def _summary(r: dict) -> list:
    pins = r["pins"]
    total = lambda key: sum(p["outcomes"].get(key, 0) for p in pins.values())  # noqa: E731
    false = sum(len(p["false_refusals"]) for p in pins.values())
    disagree = sum(len(p["live_vs_registry_disagreements"]) for p in pins.values())
    differs = sum(len(p["object_differs"]) for p in pins.values())
    audit = pins.get(PIN_VERSIONS[-1], {}).get("overwrite_audits", {})
    return ["## Summary", "",
            f"- **No false refusal, no disagreement.** On the {len(pins)} pins, every `ConstraintError` our pre-check "
            f"raised on a harvested config ({total('constraint_class_same_check')} config-pins) is raised by the real "
            f"class from the same extracted check when given only the fields that check reads "
            f"({total('constraint_class_other_check')} from another check; "
            f"{total('constraint_class_refuses_curated_rule')} from a curated rules.json rule, also refused by the "
            f"class); false refusals: {false}; live vs registry verdicts that differ: {disagree}; built objects "
            f"holding a value other than the one passed: {differs}.",
            "- **What the pre-check cannot see.** Real-class errors that are not typed come from checks the registry "
            f"marks as not pre-checkable, with the reason ({total('untyped_from_a_skipped_check')} config-pins; the "
            "table below), or from code outside the extracted checks: Transformer Engine probes and the PP-layout "
            f"parser ({total('untyped_outside_the_checks')}); from a check we do pre-check: "
            f"{total('untyped_from_a_prechecked_check')}. On "
            f"these CPU venvs {total('untyped:environment')} config-pins fail only because TE/Apex is absent, "
            f"{total('untyped:needs_base')} need the checkpoint's values, and {total('untyped:own_values')} are the "
            "config's own values caught by a check we skip (a loop, a field `__post_init__` writes first).",
            f"- **Typed refusals the class would take** ({total('raw_class:class_accepts')} config-pins): "
            "`moe_flex_dispatcher_backend=None` (Bridge's \"no flex backend\"; not in the Literal), and "
            "`moe_router_dtype=torch.float32` / `'bf16'` (Bridge perf recipes): Megatron's router compares the "
            "field with `'fp32'`/`'fp64'` (`moe/router.py:104` in 0.19.2), so these values are silently ignored and "
            "the router keeps the input dtype; the API names the accepted values instead.",
            "- **Enum fields given as strings** (verl's `attention_backend: flash`/`'fused'`, 20 configs): the class "
            "compares with `AttnBackend` members (`language_module.py:123-139`), so a str selects nothing. "
            "`build_config` now passes the member (`compat/build.py` `live_values`) and refuses a name that is none.",
            f"- **Wrappers overwrite and drop.** Bridge's MixedPrecisionConfig overwrites "
            f"{audit.get('user_set_values_overwritten', 0)} recipe-set values (`grad_reduce_in_fp32`) and "
            f"`compat.audit` reports every one ({audit.get('user_set_values_missed_by_audit', 0)} missed); NeMo-RL "
            "never passes the `use_custom_fsdp` of its YAML DDP block (153 configs; all `false`, so nothing is lost "
            "today, but a user's `true` would be) and hard-codes `average_in_collective=False`; verl silently "
            "removes keys its Megatron lacks, where the API drops only values equal to the release's behaviour.",
            "- **Nothing-lost limits seen on real configs.** NeMo-RL's `cuda_graph_modules: []` is refused on "
            "0.12-0.17: the field starts in 0.18 with default `'full'`, which that release's `__post_init__` rewrites "
            "to `[]`, so `[]` is the older behaviour too but the API compares raw defaults (a value-equivalence entry "
            "in the data would let it drop). Bridge's `offload_modules=None` is refused on 0.12-0.15 (default "
            "`list()`); None and `[]` are the same only while `fine_grained_activation_offloading` is off.", ""]


def _findings(r: dict) -> list:
    out = ["## Findings", ""]
    newest = PIN_VERSIONS[-1]
    own = [g for g in r["refusals"][newest]["shown"] if g["verdict"] == "refused_own_values"]
    out += [f"### 1. Refused on {newest} because of the configs' own values", ""]
    out += _table(["configs", "error", "message", "examples"],
                  [[g["configs"], g["error"], g["message"][:150], "; ".join(g["sites"][:2])] for g in own[:SHOW]])
    base = [g for g in r["refusals"][newest]["shown"] if g["verdict"] == "refused_needs_base"]
    out += [f"Refused on {newest} with a field the block leaves to its base (not a verdict on the recipe):", ""]
    out += _table(["configs", "message", "fields from the base", "examples"],
                  [[g["configs"], g["message"][:120], ", ".join(sorted(set(g["involved_unset"] + g["involved_skeleton"]
                                                                           + g["involved_wrapper_writes"]))),
                    g["sites"][0]] for g in base[:8]])
    p = r["pins"].get(newest, {})
    out += ["### 2. Type policy: values the class itself would take", ""]
    out += _table(["configs", "field", "value", "examples"],
                  [[e["configs"], f"`{e['field']}`", _v(e["value"]), "; ".join(e["sites"][:2])]
                   for e in p.get("type_policy", [])])
    audit = p.get("overwrite_audits", {})
    out += ["### 3. Bridge's MixedPrecisionConfig overwrites recipe values; `compat.audit` sees each one", "",
            f"`update_config_with_precision_overrides` (Bridge `training/mixed_precision.py`) writes every field of "
            f"the recipe's MixedPrecisionConfig over the DDP and optimizer configs that have it. Replayed on "
            f"{audit.get('built', 0)} built DDP/optimizer configs of {newest}: {audit.get('fields_overwritten', 0)} "
            f"fields changed, {audit.get('user_set_values_overwritten', 0)} of them values the recipe set; "
            f"`compat.audit` reported {audit.get('audit_reported_fields', 0)} differences and missed "
            f"{audit.get('user_set_values_missed_by_audit', 0)} of the recipe-set values.", ""]
    out += _table(["site", "config", "field", "recipe set", "overwritten to", "from"],
                  [[u["site"].split("::")[-1], u["kind"], f"`{u['field']}`", _v(u["recipe"]), _v(u["now"]),
                    u["where"]] for u in audit.get("user_overwrites", [])[:SHOW]])
    out += ["### 4. Silent default drift: fields left unset whose megatron default changed between pins", ""]
    out += _table(["class", "field", "default (from the first pin that has it, then each change)",
                   "configs relying", "of them MoE (EP>1 or experts set)", "by project"],
                  [[e["config"], f"`{e['field']}`", "; ".join(e["defaults"]), e["configs_relying"],
                    e["moe_configs_relying"], ", ".join(f"{k} {n}" for k, n in e["by_project"].items())]
                   for e in r["default_drift"] if e["config"] != "mla"][:SHOW + 4])
    out += ["### 5. Wrapper defaults that differ from megatron-core's", "",
            f"Values a config gets from wrapper code or a base file rather than its own file, that differ from "
            f"megatron-core {newest}'s default ({r['wrapper_values']['total']} distinct value/place pairs; top "
            "rows):", ""]
    out += _table(["project", "class", "field", "value", f"megatron {newest}", "configs", "set at"],
                  [[e["project"], e["config"], f"`{e['field']}`", _v(e["value"]), _v(e["megatron_default"]),
                    e["configs"], e["where"]] for e in r["wrapper_values"]["shown"][:SHOW + 6]])
    out += [f"Class-level defaults of Bridge's model providers that differ from megatron-core {newest} "
            f"({r['provider_defaults']['total']} field/value pairs; top rows):", ""]
    out += _table(["field", "provider default", f"megatron {newest}", "provider classes", "example"],
                  [[f"`{e['field']}`", _v(e["value"]), _v(e["megatron_default"]), e["classes"], e["example"]]
                   for e in r["provider_defaults"]["shown"][:SHOW]])
    out += ["### 6. YAML typing: OmegaConf vs plain PyYAML", ""]
    out += _table(["project", "field", "OmegaConf", "plain PyYAML", "places", "example", "API given the PyYAML value"],
                  [[e["project"], f"`{e['field']}`", _v(e["omegaconf"]), _v(e["plain_yaml"]), e["places"],
                    e["example"], e["api_with_plain_yaml_value"][:120]] for e in r["yaml_typing"]])
    out += ["### 7. What the wrappers pass on", ""]
    for f in r["nemo_rl_ddp_forwarding"]:
        out += [f"NeMo-RL builds DistributedDataParallelConfig at `{f['call']}` from the YAML keys "
                f"{', '.join(f'`{k}`' for k in f['forwarded'].values())} (and locals "
                f"{', '.join(f'`{k}`' for k in f['via_local'])}); it hard-codes "
                f"{', '.join(f'`{k}={v!r}`' for k, v in f['hard_coded'].items())}.", ""]
        out += _table(["YAML key in distributed_data_parallel_config", "configs", "values", "what happens",
                       "example"],
                      [[f"`{k}`", e["configs"], ", ".join(_v(x) for x in e["values"]), "never passed to Megatron",
                        e["example"]] for k, e in f["yaml_keys_not_passed"].items()] +
                      [[f"`{k}`", e["configs"], ", ".join(_v(x) for x in e["values"]),
                        f"replaced by the hard-coded {e['hard_coded']!r} ({e['differ_from_hard_coded']} configs "
                        "set another value)", e["example"]] for k, e in f["yaml_keys_hard_coded"].items()])
    out += ["verl's `check_and_construct_configs` (`verl/models/mcore/config_converter.py`) removes every "
            "override key its installed TransformerConfig lacks, with a warning, and builds the rest. The API "
            "instead drops a key only when its value equals what that release does anyway, and refuses otherwise:", ""]
    out += _table(["key", "value", "verl drops it on", "the API refuses it on (value would be lost)",
                   "the API on the newest pin verl drops it on"],
                  [[f"`{e['field']}`", _v(e["value"]), e["verl_drops_on"], e["api_refuses_on"] or "-", e["api"]]
                   for e in r["verl_key_drops"]])
    return out
