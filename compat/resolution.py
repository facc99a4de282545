# SPDX-License-Identifier: Apache-2.0
"""Resolve user overrides into the exact kwargs of one config class of one megatron-core build, with provenance.

Any config in ``compat.configs`` ("ddp", "optimizer", "transformer", "mla", ...). For a class that takes an
optimizer config (``ConfigClass.takes_optimizer``: DDPConfig) the resolver rules (``compat.fp32_rule``) and the cross
rules add values from it; the curated checks of rules.json for the class are applied, and the ``__post_init__``
checks extracted from its source are pre-checked (both with ``compat.precheck``). ``resolve_configs`` resolves the
DDP, optimizer and transformer configs of one run together, so that the cross rules apply.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import cross, fp32_rule, precheck
from . import version as _v
from .annotations import type_of
from .canonical import Canonical, canonical
from .configs import CONFIGS, config_class
from .dtypes import to_torch
from .errors import (
    CompatError,
    ConstraintError,
    DroppedFieldWarning,
    InvalidValueError,
    NewerVersionWarning,
    UnsupportedFieldError,
    cli_command,
)
from .evaluate import render
from .registry import Registry, Schema, curated_checks, registry

USER, RESOLVER, COERCED, CROSS = "user", "resolver", "coerced", "cross-config rule"
DEFAULT, IMPLIED, LENIENT, ABSENT = "megatron-default", "dropped: equals implied default", "dropped: lenient", "absent"
DTYPE_FORMATS = ("torch", "str")
OVERRIDE_HINT = ("; the class would silently replace the value you set, so it is refused (nothing a user sets is "
                 "lost); leave it unset, or pass lenient=True to drop it with a warning")


@dataclass
class FieldResolution:
    name: str
    value: object
    source: str
    target_name: str | None  # what the target build calls it; None when the build lacks it
    given_as: tuple = ()
    rule: str | None = None
    note: str | None = None

    def to_dict(self) -> dict:  # by hand: dataclasses.asdict deep-copies every value (slow for 450 fields)
        return {"name": self.name, "value": _jsonable(self.value), "source": self.source,
                "target_name": self.target_name, "given_as": list(self.given_as), "rule": self.rule,
                "note": self.note}


@dataclass
class Resolution:
    version: str
    schema_source: str
    match: str
    fields: dict = field(default_factory=dict)
    kwargs: dict = field(default_factory=dict)
    dropped: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    config: str = field(kw_only=True)
    class_name: str = field(kw_only=True)
    prechecks: dict = field(default_factory=dict)  # how many __post_init__ checks were evaluated / not
    requests: dict = field(default_factory=dict, repr=False)  # values cross rules need in other configs

    def to_dict(self) -> dict:
        return {"config": self.config, "class": self.class_name, "version": self.version,
                "schema_source": self.schema_source, "match": self.match,
                "kwargs": {k: _jsonable(v) for k, v in self.kwargs.items()},
                "fields": {n: f.to_dict() for n, f in self.fields.items()},
                "dropped": [f.to_dict() for f in self.dropped],
                "prechecks": dict(self.prechecks), "warnings": list(self.warnings)}


def _jsonable(value):
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, (str, int, float, bool, type(None), list, dict)):
        return value
    return repr(value)


def target_schema(version=None, reg: Registry | None = None, *, config: str) -> tuple[Schema, str, list[str]]:
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
                   f"`{cli_command(f'gate megatron-core=={version}')}` to review it. Using {release}'s fields.")
        warnings.warn(message, NewerVersionWarning, stacklevel=3)
        notes.append(message)
    elif how != "exact":
        notes.append(f"megatron-core {version} is described by registry release {release} ({how})")
    return reg.schema(release, config=config), how, notes


# ------------------------------------------------------------------------------------ curated checks (rules.json)
def _apply_curated(values: dict, schema: Schema, canon: Canonical, lenient: bool) -> list[str]:
    """Pre-check (and mirror the coercions of) the curated checks of rules.json that apply to this build.

    They run on the values as set, before they are placed. A coercion that would override a value the user set is
    refused (the class would silently replace it); ``lenient`` drops the user's value with a warning instead and
    keeps the coerced one. Returns the notes of what was dropped."""
    dropped = []

    def effective() -> dict:
        out = {name: spec.default for name, spec in canon.fields.items()}
        out.update({f.name: f.default for f in schema.fields})
        out.update({n: f.value for n, f in values.items()})
        return out

    for check in curated_checks(schema.config):
        if not precheck.applies(check, schema):
            continue
        current = effective()  # again per check: an earlier coercion may have changed it
        fired = precheck.holds(check, current) if check.kind == "coerce" else precheck.fires(check, current)
        if not fired:
            continue
        involved = {name: current.get(name) for name in check.reads}
        message = render(check.message, current)
        if check.kind != "coerce":
            raise ConstraintError(check.id, message, involved, schema.version)
        for name, forced in check.sets:
            current = values.get(name)
            if current is not None and current.source == USER and current.value != forced:
                if not lenient:
                    raise ConstraintError(check.id, message + OVERRIDE_HINT, {**involved, name: current.value},
                                          schema.version)
                note = (f"dropped {name}={current.value!r}: megatron-core {schema.version} would override it "
                        f"({message}) [lenient]")
                warnings.warn(note, DroppedFieldWarning, stacklevel=4)
                values[name] = FieldResolution(name, forced, COERCED, None, current.given_as, check.id, note)
                dropped.append(note)
                continue
            if current is None:
                values[name] = FieldResolution(name, forced, COERCED, None, rule=check.id, note=message)
    return dropped


# ------------------------------------------------------------------------------------ resolve
def resolve(overrides: Mapping[str, Any] | None = None, optimizer_config: Any = None, version: str | None = None, *,
            config: str = "ddp", lenient: bool = False,
            schema: Schema | None = None, extra: dict | None = None, prechecks: bool = True) -> Resolution:
    """Every canonical field of ``config`` with its value and where it came from, plus the target build's kwargs.

    ``optimizer_config`` feeds the DDP resolver rules (``config="ddp"`` only). ``extra`` holds values other rules
    set (name -> (value, rule)); the cross-config rules use it. ``schema`` (a live schema) replaces the registry's.
    ``prechecks=False`` skips the extracted ``__post_init__`` checks (the kwargs then meet Megatron's own checks).
    """
    reg = registry()
    if schema is not None and not isinstance(schema, Schema):
        raise InvalidValueError("schema", type(schema).__name__, "expected a Schema from compat.live_schema, "
                                "or None for the registry's")
    key = schema.config if schema is not None else config_class(config).key
    takes_optimizer = config_class(key).takes_optimizer
    if not takes_optimizer and optimizer_config is not None:
        which = " and ".join(k for k, c in CONFIGS.items() if c.takes_optimizer)
        raise InvalidValueError("optimizer_config", type(optimizer_config).__name__,
                                f"only the {which} config takes an optimizer config (resolve it with "
                                "config='optimizer')")
    notes: list[str] = []
    how = "live"
    if schema is None:
        schema, how, notes = target_schema(version, reg, config=key)
    canon = canonical(reg, schema if schema.source == "live" else None, config=key)
    given = canon.canonicalize(overrides, schema)

    values = {n: FieldResolution(n, g.value, USER, None, g.given_as, note=g.note) for n, g in given.items()}
    notes += [g.note for g in given.values() if g.note]
    for name, (value, rule) in (extra or {}).items():
        if name not in given:
            values[name] = FieldResolution(name, canon.check_value(name, value), CROSS, None, rule=rule)
    requests: dict = {}
    if takes_optimizer:
        view = optimizer_view(optimizer_config)
        for name, value, rule in fp32_rule.injections({n: g.value for n, g in given.items()}, view):
            if name not in values or values[name].source != USER:
                values[name] = FieldResolution(name, canon.check_value(name, value), RESOLVER, None, rule=rule)
        if optimizer_config is not None:
            sides = {key: _own_side(key, values, set(given), schema, canon),
                     "optimizer": _optimizer_side(optimizer_config, schema.version, reg)}
            sets, cross_notes = cross.plan(sides, schema.version)
            notes += cross_notes
            for name, (value, rule) in sets[key].items():
                values[name] = FieldResolution(name, canon.check_value(name, value), CROSS, None, rule=rule)
            requests = {k: v for k, v in sets.items() if k != key and v}
    notes += _apply_curated(values, schema, canon, lenient)

    res = Resolution(schema.version, schema.source, how, warnings=notes, config=key, class_name=schema.class_name)
    res.requests = requests
    for fr in values.values():
        _place(fr, schema, canon, res, lenient)
    _report_defaults(schema, canon, res)
    if prechecks:
        env = precheck.environment(schema, res.kwargs)
        found, res.prechecks = precheck.run(schema, env)
        if found is not None:
            raise precheck.error_for(found, env, schema)
    else:
        res.prechecks = {"checks": len(schema.checks), "skipped": True}
    return res


def optimizer_view(optimizer_config):
    """What the resolver rules read: a Resolution becomes the dict of the fields its build has."""
    if isinstance(optimizer_config, Resolution):
        return {n: f.value for n, f in optimizer_config.fields.items() if f.target_name is not None}
    return optimizer_config


def effective_values(values: dict, schema: Schema, canon: Canonical) -> dict:
    """Canonical name -> the value the build will hold: set values, else the build's default, else implied."""
    out = {}
    for name in canon.fields:
        if name in values:
            out[name] = values[name].value
        elif name in schema:
            out[name] = schema.get(name).default
        elif (old := canon.old_name_in(name, schema)) is not None:
            out[name] = _forward(canon.renames[old], schema.get(old).default)
        else:
            out[name] = canon.implied(name, schema.version)[0]
    return out


def _own_side(key: str, values: dict, given: set, schema: Schema, canon: Canonical) -> cross.Side:
    return cross.Side(key, effective_values(values, schema, canon), given,
                      lambda n: n in schema or canon.old_name_in(n, schema) is not None)


def _optimizer_side(optimizer_config, version: str, reg: Registry) -> cross.Side:
    if isinstance(optimizer_config, Resolution):
        fields = optimizer_config.fields
        return cross.Side("optimizer", {n: f.value for n, f in fields.items()},
                          {n for n, f in fields.items() if f.source == USER},
                          lambda n: n in fields and fields[n].target_name is not None)
    canon = canonical(reg, None, config="optimizer")
    defaults = {}
    try:
        release, _how = _v.match_release(version, reg.versions_having("optimizer"))
        defaults = {f.name: f.default for f in reg.schema(release, config="optimizer").fields}
    except CompatError:
        pass
    return cross.object_side("optimizer", optimizer_config, canon.fields, defaults)


def _place(fr: FieldResolution, schema: Schema, canon: Canonical, res: Resolution, lenient: bool):
    name = fr.name
    if name in schema:
        fr.target_name = name
        res.kwargs[name] = fr.value
        res.fields[name] = fr
        return
    old = canon.old_name_in(name, schema)
    if old is not None:
        try:
            converted = canon.to_old(name, fr.value)
        except KeyError:
            raise UnsupportedFieldError(name, fr.value, schema.version, canon.supported_in(name),
                                        f"{old}, its older form, cannot express this value") from None
        fr.target_name = old
        res.kwargs[old] = converted
        res.fields[name] = fr
        return
    implied, exact = canon.implied(name, schema.version)
    if exact and (_equal(fr.value, implied) or canon.equivalent(name, fr.value, implied)):
        fr.source, fr.note = IMPLIED, f"megatron-core {schema.version} has no {name}; it behaves as {fr.value!r}"
        res.dropped.append(fr)
        res.fields[name] = fr
        return
    hints = []
    if fr.source in (RESOLVER, CROSS):
        hints.append(f"set by the {fr.source} ({fr.rule}); pass {name} explicitly to opt out")
    if canon.fields[name].introduced is None:
        hints.insert(0, f"needs a megatron-core build with {name}")
    label = _label_hint(name, schema, canon)
    if label:
        hints.insert(0, label)
    if not lenient:
        raise UnsupportedFieldError(name, fr.value, _build_name(schema), canon.supported_in(name), "; ".join(hints))
    fr.source = LENIENT
    fr.note = (f"dropped {name}={fr.value!r}: not supported by megatron-core {_build_name(schema)} "
               f"(exists in {canon.supported_in(name)})")
    warnings.warn(fr.note, DroppedFieldWarning, stacklevel=4)
    res.dropped.append(fr)
    res.warnings.append(fr.note)
    res.fields[name] = fr


def _build_name(schema: Schema) -> str:
    return schema.version if schema.source == "registry" else f"{schema.version} ({schema.source} {schema.class_name})"


def _label_hint(name: str, schema: Schema, canon: Canonical) -> str:
    """A live build whose version label names a release that has the field (a pre-release or dev commit)."""
    if schema.source != "live":
        return ""
    reg = canon.registry
    try:
        release, _how = _v.match_release(schema.version, reg.versions_having(canon.config))
    except CompatError:
        return ""
    same_release = _v.parse(release).release == _v.parse(schema.version).release
    if name in reg.schema(release, config=canon.config) and same_release:
        return (f"this build lacks {name} although its version label says {schema.version} (release {release} "
                "has it): a pre-release or a development commit")
    return ""


def _equal(a, b) -> bool:
    try:
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return list(a) == list(b)
        return bool(a == b) and (type(a) is type(b) or {type(a), type(b)} <= {int, float})
    except Exception:  # a value with an odd __eq__ is never "equal to the default"
        return False


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
            note = f"default of megatron-core {schema.version}" + ("" if f.exact else " (an expression)")
            if f.required:
                note = "required: no default, the caller must pass it"
            res.fields[name] = FieldResolution(name, value if f.exact else f.default_text, DEFAULT, f.name,
                                               note=note)
    for name in canon.fields:
        if name not in res.fields:
            value, _exact = canon.implied(name, schema.version)
            res.fields[name] = FieldResolution(name, value, ABSENT, None,
                                               note=f"not in megatron-core {schema.version}")
    placed = set(order)
    rest = [n for n in res.fields if n not in placed]
    res.fields = {n: res.fields[n] for n in order + rest}


def _forward(rename: dict, value):
    return next((after for before, after in rename.get("map", []) if before == value), value)


def config_kwargs(config: str, overrides: Mapping[str, Any] | None = None, version: str | None = None, *,
                  lenient: bool = False, dtype_format: str = "torch", optimizer_config: Any = None) -> dict[str, Any]:
    """The exact kwargs of ``config`` for ``version`` (registry only; megatron not needed)."""
    if dtype_format not in DTYPE_FORMATS:
        raise InvalidValueError("dtype_format", dtype_format, f"must be one of {', '.join(map(repr, DTYPE_FORMATS))}")
    res = resolve(overrides, optimizer_config, version, config=config, lenient=lenient)
    return materialize(res.kwargs, res) if dtype_format == "torch" else res.kwargs


def ddp_kwargs(overrides: Mapping[str, Any] | None = None, optimizer_config: Any = None, version: str | None = None,
               *, lenient: bool = False, dtype_format: str = "torch") -> dict[str, Any]:
    """The exact DistributedDataParallelConfig kwargs for ``version`` (registry only; megatron not needed).

    Dtype values are torch dtypes (torch is imported only when one is present); ``dtype_format="str"`` gives
    names such as "bfloat16" instead.
    """
    return config_kwargs("ddp", overrides, version, lenient=lenient, dtype_format=dtype_format,
                         optimizer_config=optimizer_config)


def optimizer_kwargs(overrides: Mapping[str, Any] | None = None, version: str | None = None, *, lenient: bool = False,
                     dtype_format: str = "torch", config: str = "optimizer") -> dict[str, Any]:
    """The exact OptimizerConfig kwargs for ``version`` (``config="adam_optimizer"`` for the 0.16-0.17 subclass)."""
    return config_kwargs(config, overrides, version, lenient=lenient, dtype_format=dtype_format)


def transformer_kwargs(overrides: Mapping[str, Any] | None = None, version: str | None = None, *,
                       lenient: bool = False, dtype_format: str = "torch", config: str = "transformer") -> dict[str, Any]:
    """The exact TransformerConfig kwargs for ``version`` (``config="mla"`` for MLATransformerConfig)."""
    return config_kwargs(config, overrides, version, lenient=lenient, dtype_format=dtype_format)


def materialize(kwargs: dict, res_or_canon=None) -> dict:
    """Turn dtype names into torch dtypes (for fields whose annotation is a torch.dtype)."""
    if res_or_canon is None:
        canon = canonical(registry(), config="ddp")
    elif isinstance(res_or_canon, Resolution):
        canon = canonical(registry(), None, config=res_or_canon.config)
    else:
        canon = res_or_canon
    out = {}
    for name, value in kwargs.items():
        spec = canon.fields.get(name)
        kinds = type_of(spec.annotation).kinds() if spec is not None else set()
        out[name] = to_torch(value) if isinstance(value, str) and "dtype" in kinds and "str" not in kinds else value
    return out


# ---- several configs of one run together, so that the cross rules apply -------------------------------------
_ROUNDS = 3  # an "equal" rule can ask the optimizer to follow DDP once; a third round would mean a cycle


@dataclass
class ConfigResolutions:
    version: str
    ddp: Resolution | None = None
    optimizer: Resolution | None = None
    transformer: Resolution | None = None

    def items(self) -> list[tuple[str, Resolution]]:
        return [(k, r) for k, r in (("ddp", self.ddp), ("optimizer", self.optimizer),
                                    ("transformer", self.transformer)) if r is not None]

    def kwargs(self, dtype_format: str = "str") -> dict:
        """{"ddp": {...}, "optimizer": {...}, "transformer": {...}} for the configs that were given."""
        return {k: (materialize(r.kwargs, r) if dtype_format == "torch" else dict(r.kwargs)) for k, r in self.items()}

    def to_dict(self) -> dict:
        return {"version": self.version, **{k: r.to_dict() for k, r in self.items()}}


def resolve_configs(ddp: Mapping[str, Any] | None = None, optimizer: Mapping[str, Any] | None = None,
                    transformer: Mapping[str, Any] | None = None, version: str | None = None, *, lenient: bool = False,
                    transformer_config: str = "transformer") -> ConfigResolutions:
    """Resolve the configs given (overrides dicts, canonical or old names) for one megatron-core build.

    The optimizer is resolved first; DDP then sees it (the FP32 resolver rule, the cross rules of
    cross_rules.json); when a cross rule needs the optimizer to follow a DDP value the user set, the optimizer
    is resolved again with that value (source "cross-config rule"). ``transformer_config="mla"`` resolves
    MLATransformerConfig. Unset configs stay None.
    """
    opt_extra: dict = {}
    opt = resolve(optimizer, config="optimizer", version=version, lenient=lenient) if optimizer is not None else None
    tf = (resolve(transformer, config=transformer_config, version=version, lenient=lenient)
          if transformer is not None else None)
    ddp_res = None
    if ddp is not None:
        for _ in range(_ROUNDS):
            ddp_res = resolve(ddp, opt, version, config="ddp", lenient=lenient)
            wanted = ddp_res.requests.get("optimizer")
            if not wanted or opt is None:
                break
            opt_extra.update(wanted)
            opt = resolve(optimizer, config="optimizer", version=version, lenient=lenient, extra=opt_extra)
    first = next(r for r in (ddp_res, opt, tf) if r is not None) if (ddp_res or opt or tf) else None
    return ConfigResolutions(first.version if first else (version or ""), ddp_res, opt, tf)
