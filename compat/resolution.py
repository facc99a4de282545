# SPDX-License-Identifier: Apache-2.0
"""Resolve user overrides into the exact kwargs of one config class of one megatron-core build, with provenance.

Any config in ``compat.configs`` ("ddp", "optimizer", "transformer", "mla", ...). For a class that takes an
optimizer config (``ConfigClass.takes_optimizer``: DDPConfig) the resolver rules (``compat.fp32_rule``) and the cross
rules add values from it; the curated checks of rules.json for the class are applied, and the ``__post_init__``
checks extracted from its source are pre-checked (both with ``compat.precheck``). ``resolve_configs`` resolves the
DDP, optimizer and transformer configs of one run together, so that the cross rules apply. The kwargs-only calls
(``ddp_kwargs``, ...) sit on top of it, in ``compat.kwargs``.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import cross, fp32_rule, precheck
from .canonical import Canonical, canonical
from .configs import CONFIGS, config_class
from .effective import EffectiveConfig, forward, post_init_values
from .errors import ConstraintError, DroppedFieldWarning, InvalidValueError, UnsupportedFieldError
from .evaluate import render
from .optimizer_reader import OptimizerReader
from .registry import Registry, Schema, curated_checks, registry
from .target import Target, target_for
from .value_equality import same_value

USER, RESOLVER, COERCED, CROSS = "user", "resolver", "coerced", "cross-config rule"
DEFAULT, IMPLIED, LENIENT, ABSENT = "megatron-default", "dropped: equals implied default", "dropped: lenient", "absent"
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
    """The registry schema describing ``version`` (default: the installed one, else the newest release), how the
    version matched, and the notes on it."""
    target = target_for(version, reg)
    return target.schema(config), target.how, list(target.notes)


# ------------------------------------------------------------------------------------ curated checks (rules.json)
def _apply_curated(values: dict, schema: Schema, canon: Canonical, lenient: bool) -> list[str]:
    """Pre-check (and mirror the coercions of) the curated checks of rules.json that apply to this build.

    They run on the values as set, before they are placed. A coercion that would override a value the user set is
    refused (the class would silently replace it); ``lenient`` drops the user's value with a warning instead and
    keeps the coerced one. Returns the notes of what was dropped."""
    dropped = []
    for check in curated_checks(schema.config):
        if not precheck.applies(check, schema):
            continue
        # again per check: an earlier coercion may have changed it
        current = EffectiveConfig(schema, canon, {n: f.value for n, f in values.items()}).by_any_name()
        fired = precheck.holds(check, current) if check.kind == "coerce" else precheck.fires(check, current)
        if not fired:
            continue
        involved = {name: current.get(name) for name in check.reads}
        message = render(check.message, current)
        if check.kind != "coerce":
            raise ConstraintError(check.id, message, involved, schema.version)
        for name, forced in check.sets:
            placed = values.get(name)
            if placed is not None and placed.source == USER and not same_value(placed.value, forced):
                if not lenient:
                    raise ConstraintError(check.id, message + OVERRIDE_HINT, {**involved, name: placed.value},
                                          schema.version)
                note = (f"dropped {name}={placed.value!r}: megatron-core {schema.version} would override it "
                        f"({message}) [lenient]")
                warnings.warn(note, DroppedFieldWarning, stacklevel=4)
                values[name] = FieldResolution(name, forced, COERCED, None, placed.given_as, check.id, note)
                dropped.append(note)
                continue
            if placed is None:
                values[name] = FieldResolution(name, forced, COERCED, None, rule=check.id, note=message)
    return dropped


# ------------------------------------------------------------------------------------ resolve
def resolve(overrides: Mapping[str, Any] | None = None, optimizer_config: Any = None, version: str | None = None, *,
            config: str = "ddp", lenient: bool = False, schema: Schema | None = None, extra: dict | None = None,
            prechecks: bool = True, target: Target | None = None) -> Resolution:
    """Every canonical field of ``config`` with its value and where it came from, plus the target build's kwargs.

    ``optimizer_config`` feeds the DDP resolver rules (``config="ddp"`` only): a Resolution of it, an OptimizerConfig,
    a dataclass or a mapping. ``extra`` holds values other rules set (name -> (value, rule)); the cross-config rules
    use it. ``schema`` (a live schema) replaces the registry's. ``target`` (``compat.target.target_for``) is the
    build already matched, in place of ``version``. ``prechecks=False`` skips the extracted ``__post_init__`` checks
    (the kwargs then meet Megatron's own checks).
    """
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
    if schema is not None:
        target = target_for(reg=target.registry if target else None, live=schema)
    elif target is None:
        target = target_for(version)
    schema = target.schema(key)
    notes: list[str] = list(target.notes)
    canon = canonical(target.registry, schema if schema.source == "live" else None, config=key)
    given = canon.canonicalize(overrides, schema)

    values = {n: FieldResolution(n, g.value, USER, None, g.given_as, note=g.note) for n, g in given.items()}
    notes += [g.note for g in given.values() if g.note]
    for name, (value, rule) in (extra or {}).items():
        if name not in given:
            values[name] = FieldResolution(name, canon.check_value(name, value), CROSS, None, rule=rule)
    requests: dict = {}
    if takes_optimizer:
        reader = (OptimizerReader.of_fields(optimizer_config.fields) if isinstance(optimizer_config, Resolution)
                  else OptimizerReader(optimizer_config))
        for name, value, rule in fp32_rule.injections({n: g.value for n, g in given.items()}, reader):
            if name not in values or values[name].source != USER:
                values[name] = FieldResolution(name, canon.check_value(name, value), RESOLVER, None, rule=rule)
        if reader.present:
            own = EffectiveConfig(schema, canon, {n: f.value for n, f in values.items()})
            sides = {key: cross.Side(key, own.by_canonical(), set(given),
                                     lambda n: n in schema or canon.old_name_in(n, schema) is not None),
                     "optimizer": _optimizer_side(reader, target)}
            sets, cross_notes = cross.plan(sides, schema.version)
            notes += cross_notes
            for name, (value, rule) in sets[key].items():
                values[name] = FieldResolution(name, canon.check_value(name, value), CROSS, None, rule=rule)
            requests = {k: v for k, v in sets.items() if k != key and v}
    notes += _apply_curated(values, schema, canon, lenient)

    res = Resolution(schema.version, schema.source, target.how, warnings=notes, config=key,
                     class_name=schema.class_name)
    res.requests = requests
    for fr in values.values():
        _place(fr, target, schema, canon, res, lenient)
    _report_defaults(schema, canon, res)
    if prechecks:
        env = post_init_values(schema, res.kwargs)
        found, res.prechecks = precheck.run(schema, env)
        if found is not None:
            raise precheck.error_for(found, env, schema)
    else:
        res.prechecks = {"checks": len(schema.checks), "skipped": True}
    return res


def _optimizer_side(reader: OptimizerReader, target: Target) -> cross.Side:
    optimizer = target.nearest_schema("optimizer")
    defaults = {f.name: f.default for f in optimizer.fields} if optimizer is not None else {}
    return reader.side(cross.fields_named("optimizer"), defaults)


def _place(fr: FieldResolution, target: Target, schema: Schema, canon: Canonical, res: Resolution, lenient: bool):
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
    if exact and (same_value(fr.value, implied) or canon.equivalent(name, fr.value, implied)):
        fr.source, fr.note = IMPLIED, f"megatron-core {schema.version} has no {name}; it behaves as {fr.value!r}"
        res.dropped.append(fr)
        res.fields[name] = fr
        return
    hints = []
    if fr.source in (RESOLVER, CROSS):
        hints.append(f"set by the {fr.source} ({fr.rule}); pass {name} explicitly to opt out")
    if canon.fields[name].introduced is None:
        hints.insert(0, f"needs a megatron-core build with {name}")
    label = target.label_hint(name, canon.config)
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


def _report_defaults(schema: Schema, canon: Canonical, res: Resolution):
    """Add every field nobody set, and order the report like the target's dataclass."""
    order = []
    for f in schema.fields:
        name, value = f.name, f.default
        rename = canon.renames.get(f.name)
        if rename is not None:
            if rename["new"] in schema:
                continue  # a dead alias (use_custom_fsdp from 0.14): reported under its new name
            name, value = rename["new"], forward(rename, f.default)
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
        return {k: (canonical(registry(), None, config=r.config).materialize(r.kwargs) if dtype_format == "torch"
                    else dict(r.kwargs)) for k, r in self.items()}

    def to_dict(self) -> dict:
        return {"version": self.version, **{k: r.to_dict() for k, r in self.items()}}


def resolve_configs(ddp: Mapping[str, Any] | None = None, optimizer: Mapping[str, Any] | None = None,
                    transformer: Mapping[str, Any] | None = None, version: str | None = None, *, lenient: bool = False,
                    transformer_config: str = "transformer") -> ConfigResolutions:
    """Resolve the configs given (overrides dicts, canonical or old names) for one megatron-core build.

    The optimizer is resolved first; DDP then sees it (the FP32 resolver rule, the cross rules of
    cross_rules.json); when a cross rule needs the optimizer to follow a DDP value the user set, the optimizer
    is resolved again with that value (source "cross-config rule"). ``transformer_config="mla"`` resolves
    MLATransformerConfig. Unset configs stay None. The version is matched once, for all of them.
    """
    if ddp is None and optimizer is None and transformer is None:
        return ConfigResolutions(version or "")
    target = target_for(version)
    opt_extra: dict = {}
    opt = resolve(optimizer, config="optimizer", lenient=lenient, target=target) if optimizer is not None else None
    tf = (resolve(transformer, config=transformer_config, lenient=lenient, target=target)
          if transformer is not None else None)
    ddp_res = None
    if ddp is not None:
        for _ in range(_ROUNDS):
            ddp_res = resolve(ddp, opt, config="ddp", lenient=lenient, target=target)
            wanted = ddp_res.requests.get("optimizer")
            if not wanted or opt is None:
                break
            opt_extra.update(wanted)
            opt = resolve(optimizer, config="optimizer", lenient=lenient, extra=opt_extra, target=target)
    first = next(r for r in (ddp_res, opt, tf) if r is not None)
    return ConfigResolutions(first.version, ddp_res, opt, tf)
