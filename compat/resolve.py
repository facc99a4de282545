"""Resolve user overrides + optimizer config into the exact DDPConfig kwargs of one megatron-core build."""
from __future__ import annotations

import importlib.metadata
import os
import warnings
from dataclasses import asdict, dataclass, field

from . import resolver
from . import version as _v
from .canonical import Canonical, canonical
from .dtypes import to_torch
from .errors import ConstraintError, DroppedFieldWarning, NewerVersionWarning, UnsupportedFieldError
from .registry import Registry, Schema, registry, rules

USER, RESOLVER, COERCED = "user", "resolver", "coerced"
DEFAULT, IMPLIED, LENIENT, ABSENT = "megatron-default", "dropped: equals implied default", "dropped: lenient", "absent"


@dataclass
class FieldResolution:
    name: str
    value: object
    source: str
    target_name: str | None  # what the target build calls it; None when the build lacks it
    given_as: tuple = ()
    rule: str | None = None
    note: str | None = None


@dataclass
class Resolution:
    version: str
    schema_source: str
    match: str
    fields: dict = field(default_factory=dict)
    kwargs: dict = field(default_factory=dict)
    dropped: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"version": self.version, "schema_source": self.schema_source, "match": self.match,
                "kwargs": {k: _jsonable(v) for k, v in self.kwargs.items()},
                "fields": {n: {**asdict(f), "value": _jsonable(f.value), "given_as": list(f.given_as)}
                           for n, f in self.fields.items()},
                "dropped": [{**asdict(f), "value": _jsonable(f.value), "given_as": list(f.given_as)}
                            for f in self.dropped],
                "warnings": list(self.warnings)}


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def target_schema(version=None, reg: Registry | None = None) -> tuple[Schema, str, list[str]]:
    """The registry schema describing ``version`` (default: the installed one, else the newest release)."""
    reg = reg or registry()
    notes = []
    if version is None:
        version = _v.installed_version()
        if version is None:
            version = reg.newest()
            notes.append(f"megatron-core is not installed; using the newest registry release {version}")
    release, how = _v.match_release(version, reg.versions())
    if how == "newer":
        message = (f"megatron-core {version} is newer than the registry (newest {release}); run "
                   f"`python -m compat gate megatron-core=={version}` to review it. Using {release}'s fields.")
        warnings.warn(message, NewerVersionWarning, stacklevel=3)
        notes.append(message)
    elif how != "exact":
        notes.append(f"megatron-core {version} is described by registry release {release} ({how})")
    return reg.schema(release), how, notes


def _applies(rule: dict, schema: Schema) -> bool:
    if not set(rule["reads"]) <= schema.post_init_reads:
        return False
    if "since" in rule and not _v.at_least(schema.version, rule["since"]):
        return False
    return not ("until" in rule and _v.is_newer(_v.parse(schema.version).base_version, rule["until"]))


def _holds(pred: dict, effective: dict) -> bool:
    if "field" in pred:
        value = effective.get(pred["field"])
        return {"truthy": bool(value), "falsy": not value, "none": value is None,
                "not_none": value is not None}[pred["is"]]
    if "env" in pred:
        return pred["has_item"] in os.environ.get(pred["env"], "").split(",")
    if "torch_below" in pred:
        try:
            return _v.parse(importlib.metadata.version("torch")) < _v.parse(pred["torch_below"])
        except importlib.metadata.PackageNotFoundError:
            return False
    raise ValueError(f"unknown predicate {pred}")


def _apply_constraints(values: dict, schema: Schema, canon: Canonical):
    """Pre-check (and mirror the coercions of) the __post_init__ rules that apply to this build."""
    def effective() -> dict:
        out = {name: spec.default for name, spec in canon.fields.items()}
        out.update({f.name: f.default for f in schema.fields})
        out.update({n: f.value for n, f in values.items()})
        return out

    for rule in rules()["constraints"]:
        if not _applies(rule, schema):
            continue
        current = effective()  # again per rule: an earlier coercion may have changed it
        if not all(_holds(p, current) for p in rule["when"]):
            continue
        involved = {p["field"]: current[p["field"]] for p in rule["when"] if "field" in p}
        if rule["kind"] == "check":
            raise ConstraintError(rule["id"], rule["message"], involved, schema.version)
        for name, forced in rule["sets"].items():
            current = values.get(name)
            if current is not None and current.source == USER and current.value != forced:
                raise ConstraintError(rule["id"], rule["message"], {**involved, name: current.value}, schema.version)
            if current is None:
                values[name] = FieldResolution(name, forced, COERCED, None, rule=rule["id"], note=rule["message"])


def resolve(overrides=None, optimizer_config=None, version=None, *, lenient: bool = False,
            schema: Schema | None = None) -> Resolution:
    """Every canonical field with its value and where it came from, plus the kwargs for the target build."""
    reg = registry()
    notes: list[str] = []
    how = "live"
    if schema is None:
        schema, how, notes = target_schema(version, reg)
    canon = canonical(reg, schema if schema.source == "live" else None)
    given = canon.canonicalize(overrides)

    values = {n: FieldResolution(n, g.value, USER, None, g.given_as) for n, g in given.items()}
    for name, value, rule in resolver.injections({n: g.value for n, g in given.items()}, optimizer_config):
        values[name] = FieldResolution(name, value, RESOLVER, None, rule=rule)
    _apply_constraints(values, schema, canon)

    res = Resolution(schema.version, schema.source, how, warnings=notes)
    for name, fr in values.items():
        _place(fr, schema, canon, res, lenient)
    _report_defaults(schema, canon, res)
    return res


def _place(fr: FieldResolution, schema: Schema, canon: Canonical, res: Resolution, lenient: bool):
    name = fr.name
    if name in schema:
        fr.target_name = name
    elif (old := canon.old_name_in(name, schema)) is not None:
        try:
            converted = canon.to_old(name, fr.value)
        except KeyError:
            raise UnsupportedFieldError(name, fr.value, schema.version, canon.supported_in(name),
                                        f"{old}, its older form, cannot express this value") from None
        fr.target_name = old
        res.kwargs[old] = converted
        res.fields[name] = fr
        return
    elif fr.value == canon.fields[name].default:
        fr.source, fr.note = IMPLIED, f"megatron-core {schema.version} has no {name}; it behaves as {fr.value!r}"
        res.dropped.append(fr)
        res.fields[name] = fr
        return
    else:
        hint = ""
        if fr.source == RESOLVER:
            hint = f"set by the resolver ({fr.rule}); pass {name}=False explicitly to opt out"
        if name in {u["name"] for u in rules()["unreleased_fields"]}:
            hint = f"needs a megatron-core build with {name}" + (f"; {hint}" if hint else "")
        if not lenient:
            raise UnsupportedFieldError(name, fr.value, schema.version, canon.supported_in(name), hint)
        fr.source = LENIENT
        fr.note = (f"dropped {name}={fr.value!r}: not supported by megatron-core {schema.version} "
                   f"(exists in {canon.supported_in(name)})")
        warnings.warn(fr.note, DroppedFieldWarning, stacklevel=4)
        res.dropped.append(fr)
        res.warnings.append(fr.note)
        res.fields[name] = fr
        return
    res.kwargs[name] = fr.value
    res.fields[name] = fr


def _report_defaults(schema: Schema, canon: Canonical, res: Resolution):
    """Add every field nobody set, and order the report like the target's dataclass."""
    order = []
    for f in schema.fields:
        name, value = f.name, f.default
        rename = canon.renames.get(f.name)
        if rename is not None:
            if rename["new"] in schema:
                continue  # a dead alias (use_custom_fsdp from 0.14): reported under its new name
            name, value = rename["new"], _forward(rename, f.default)
        order.append(name)
        if name not in res.fields:
            res.fields[name] = FieldResolution(name, value, DEFAULT, f.name,
                                               note=f"default of megatron-core {schema.version}")
    for name, spec in canon.fields.items():
        if name not in res.fields:
            res.fields[name] = FieldResolution(name, spec.default, ABSENT, None,
                                               note=f"not in megatron-core {schema.version}")
    rest = [n for n in res.fields if n not in order]
    res.fields = {n: res.fields[n] for n in order + rest}


def _forward(rename: dict, value):
    return next((after for before, after in rename.get("map", []) if before == value), value)


def ddp_kwargs(overrides=None, optimizer_config=None, version=None, *, lenient: bool = False,
               dtype_format: str = "torch") -> dict:
    """The exact DistributedDataParallelConfig kwargs for ``version`` (registry only; megatron not needed).

    Dtype values are torch dtypes (torch is imported only when one is present); ``dtype_format="str"`` gives
    names such as "bfloat16" instead.
    """
    kwargs = resolve(overrides, optimizer_config, version, lenient=lenient).kwargs
    if dtype_format not in ("torch", "str"):
        raise ValueError(f"dtype_format must be 'torch' or 'str', not {dtype_format!r}")
    return materialize(kwargs) if dtype_format == "torch" else kwargs


def materialize(kwargs: dict, canon: Canonical | None = None) -> dict:
    """Turn dtype names into torch dtypes."""
    canon = canon or canonical(registry())
    return {name: to_torch(value) if name in canon.fields and canon.fields[name].kind[0] == "dtype" else value
            for name, value in kwargs.items()}
