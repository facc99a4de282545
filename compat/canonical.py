# SPDX-License-Identifier: Apache-2.0
"""The canonical schema of one config class: every field any release has, under its newest name, with type checks.

One ``Canonical`` per config ("ddp", "optimizer", "transformer", "mla", ...). Old names are aliases (renames.json);
fields that only the upstream Megatron-LM branches have (heads.json, rules.json) are known as unreleased.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from . import typecheck
from .acceptances import acceptance, accepted_shapes, value_aliases
from .annotations import type_of
from .configs import config_class, lineage
from .dtypes import to_torch
from .errors import CompatError, ConflictingAliasError, FieldTypeError, InvalidValueError, UnknownFieldError
from .registry import Field, Registry, Schema, curated, describe_range, field_from_record, heads, renames
from .value_equality import same_value

_SUGGEST_CUTOFF = 0.6


@dataclass(frozen=True)
class CanonicalField:
    name: str
    annotation: str  # the newest annotation
    default: object  # the newest default; ``Canonical.implied`` gives the behaviour of a build that lacks it
    introduced: str | None  # None: no release has it
    doc: str = ""
    found_in: str = ""  # where an unreleased field exists
    exact: bool = True  # False when the default is an expression kept as text
    enums: tuple = ()  # (Enum class, member names) of the Enums the annotation names

    @property
    def kind(self) -> tuple[str, bool]:
        """(base kind, optional): the single non-None kind of the annotation ("any" for unions and unknowns)."""
        spec = type_of(self.annotation)
        kinds = [m for m in spec.members if m.kind != "None"]
        optional = spec.optional or self.default is None
        if len(kinds) != 1:
            return "any", optional
        m = kinds[0]
        if m.kind == "tuple" and typecheck.describe(m) == "a list or tuple of str":
            return "str_tuple", optional
        return (m.kind if m.kind in ("bool", "int", "float", "str", "dtype") else "any"), optional


@dataclass(frozen=True)
class Given:
    value: object
    given_as: tuple[str, ...]
    note: str | None = None  # how a value was re-spelled for the target (a value alias, False sent as None)


class Canonical:
    def __init__(self, reg: Registry, extra: Schema | None = None, *, config: str):
        self.registry, self.config = reg, config
        self.class_name = config_class(config).class_name
        table = renames(config=config)
        both = extra is not None and [r for r in table if r["old"] in extra and r["new"] in extra
                                      and not r.get("old_is_dead")]
        self.renames = {r["old"]: r for r in table if not (both and r in both)}
        self.renamed_to = {r["new"]: r for r in table if not (both and r in both)}
        self.value_rules = curated(config)["value_rules"]
        self.history: dict[str, list[tuple[str, Field]]] = {}
        self.fields: dict[str, CanonicalField] = {}
        for level in lineage(config):  # a subclass is-a base: the base's fields it never had are known too
            claimed = set(self.history)
            for version in reg.versions_having(level):
                for f in reg.fields_of(version, config=level):
                    if f.name not in claimed:
                        self.history.setdefault(f.name, []).append((version, f))
        for name, seen in self.history.items():
            if name in self.renames:
                continue
            newest = seen[-1][1]
            self.fields[name] = CanonicalField(name, newest.annotation, newest.default, seen[0][0], newest.doc,
                                               exact=newest.exact, enums=newest.enums)
        self._unreleased(config)
        for f in (extra.fields if extra else ()):
            if f.name not in self.fields and f.name not in self.renames:
                self.fields[f.name] = CanonicalField(f.name, f.annotation, f.default, None, f.doc,
                                                     f"this build ({extra.version}, {extra.source})", f.exact,
                                                     f.enums)
        self._names = list(self.fields) + list(self.renames)
        self._ranks: dict = {}
        self._implied: dict = {}  # (name, version) -> implied()

    def _unreleased(self, config: str) -> None:
        for u in curated(config)["unreleased_fields"]:
            self.fields.setdefault(u["name"], CanonicalField(u["name"], u["annotation"], u["default"], None,
                                                             u.get("doc", ""), u["found_in"]))
        data = heads()
        for u in data.get("fields", {}).get(config, []):
            where = " and ".join(f"{h} (reports {data['heads'][h]['reports']}, commit "
                                 f"{data['heads'][h]['commit'][:10]})" for h in u["heads"])
            record = {k: u[k] for k in ("name", "annotation", "default", "default_expr", "required", "factory")
                      if k in u}
            f = field_from_record(record)
            self.fields.setdefault(u["name"], CanonicalField(
                f.name, f.annotation, f.default, None, u.get("doc", ""),
                f"unreleased Megatron-LM {where} only; no release has it", f.exact))

    # ---- input side -------------------------------------------------------------------------------------------
    def suggest(self, key: str) -> str | None:
        hits = difflib.get_close_matches(key, self._names, n=1, cutoff=_SUGGEST_CUTOFF)
        return hits[0] if hits else None

    def implied(self, name: str, version: str) -> tuple[object, bool]:
        """(value, exact): how a build of ``version`` that lacks ``name`` behaves.

        Before the field existed: its default when introduced. After it was removed (or in a gap): its last
        default before ``version``.
        """
        key = (name, version)
        if key not in self._implied:
            seen = self.history.get(name)
            if not seen:
                spec = self.fields[name]
                self._implied[key] = spec.default, spec.exact
            else:
                rank = self._rank(version)
                older = [f for v, f in seen if self._rank(v) <= rank]
                f = older[-1] if older else seen[0][1]
                self._implied[key] = f.default, f.exact
        return self._implied[key]

    def _rank(self, version: str):
        """Sort key of a version (registry releases by index, anything else parsed once)."""
        if version not in self._ranks:
            from . import version as _v

            self._ranks[version] = _v.parse(version)
        return self._ranks[version]

    def check_value(self, name: str, value, spec: CanonicalField | None = None, target: Field | None = None,
                    version: str = "this build"):
        """Validate one value against the field's type (the canonical one, or the target build's own) and value
        rules; return the canonical value. A target whose annotation is a ``Literal`` must list the value."""
        spec = spec or self.fields[name]
        value = self.spelling(name, value, target)[0]
        types = [(type_of(spec.annotation), spec.enums)]
        if target is not None and target.annotation != spec.annotation:
            types.append((target.type, target.enums))
        accept = accepted_shapes(self.config, name, None if target is None else version,
                                 frozenset(self.registry.releases))
        error: CompatError | None = None
        for t, enums in types:
            try:
                value_out = typecheck.check(name, value, t, spec.default, enums=enums, accept=accept)
                break
            except (FieldTypeError, InvalidValueError) as exc:
                error = exc  # the target build's own annotation last: its error names its own members
        else:
            raise self._naming_releases(error, name, value)
        if target is not None and target.type.choices is not None and value_out is not None \
                and value_out not in target.type.choices:
            raise InvalidValueError(name, value, f"megatron-core {version} declares {target.annotation}; "
                                    f"{self._literal_versions(name, value_out)}")
        rule = self.value_rules.get(name, {})
        if "min" in rule and value_out is not None and value_out < rule["min"]:
            raise InvalidValueError(name, value, f"must be >= {rule['min']}")
        if "choices" in rule and value_out not in rule["choices"]:
            raise InvalidValueError(name, value, f"must be one of {', '.join(map(repr, rule['choices']))}")
        return value_out

    def _naming_releases(self, error: CompatError, name: str, value) -> CompatError:
        """The same error, saying which releases accept the value (each judged by its own annotation, Enum
        members and type acceptances), or that none does."""
        releases = frozenset(self.registry.releases)
        ok = []
        for version, f in self.history.get(name, ()):
            try:
                typecheck.check(name, value, f.type, f.default, enums=f.enums,
                                accept=accepted_shapes(self.config, name, version, releases))
                ok.append(version)
            except (FieldTypeError, InvalidValueError):
                pass
        among = self.registry.versions_having(self.config)
        text = f"megatron-core {describe_range(ok, among)} accept it" if ok else "no release accepts it"
        if isinstance(error, FieldTypeError):
            return FieldTypeError(name, value, error.expected, text)
        return InvalidValueError(name, value, f"{error.reason} ({text})")

    def spelling(self, name: str, value, target: Field | None) -> tuple[object, str | None]:
        """(value as the target spells it, a note when re-spelled): a value alias (value_aliases.json) is sent in
        the spelling the target's Literal lists, the new one where it has both."""
        choices = target.type.choices if target is not None else None
        if choices is None or not isinstance(value, str):
            return value, None
        for alias in value_aliases(self.config, name):
            old, new = alias["old"], alias["new"]
            if value in (old, new) and (value == old or new not in choices):
                other = new if value == old else old
                if other in choices and (value not in choices or other == new):
                    return other, (f"{name}={value!r} sent as {other!r}, the spelling of this target: {old!r} "
                                   f"is the older name of {new!r} (since {alias['since']}; {alias['evidence']})")
        return value, None

    def equivalent(self, name: str, a, b) -> bool:
        """Whether two values name one setting by a value alias (cuda_graph_modules: 'full' and [])."""
        for alias in value_aliases(self.config, name):
            old, new = alias["old"], alias["new"]
            if (same_value(a, old) and same_value(b, new)) or (same_value(a, new) and same_value(b, old)):
                return True
        return False

    def rewrite_note(self, name: str, given, value, target: Field | None, version: str) -> str | None:
        """Why the value sent differs from the value given (a value alias, False sent as None), else None."""
        if given is False and value is None:
            row = acceptance(self.config, name, "false_as_none")
            ev = row["evidence"] if row else {}
            return (f"{name}=False sent as None: megatron-core {version} reads {name} by truthiness (False and None "
                    f"alike) but also with `is None`, where False would mean on "
                    f"(type_acceptances.json, e.g. {', '.join(ev.get('examples', [])[:2])})")
        return self.spelling(name, given, target)[1]

    def _literal_versions(self, name: str, value) -> str:
        ok = [v for v, f in self.history.get(name, ()) if f.type.choices is None or value in f.type.choices]
        among = self.registry.versions_having(self.config)
        return f"{value!r} is accepted by {describe_range(ok, among)}" if ok else f"no release accepts {value!r}"

    def canonicalize(self, overrides, target: Schema | None = None) -> dict[str, Given]:
        """User overrides (canonical names or aliases) -> canonical name: Given. Raises on anything bad."""
        if overrides is None:
            return {}
        if not isinstance(overrides, Mapping):
            raise FieldTypeError("<overrides>", overrides, f"a mapping of {self.class_name} fields")
        out: dict[str, Given] = {}
        raw: dict[str, dict] = {}
        for key, value in overrides.items():
            if not isinstance(key, str):
                raise FieldTypeError(repr(key), key, "a str field name")
            note = None
            if key in self.renames:
                name, value = self.renames[key]["new"], self._from_old(key, value, target)
            elif key in self.fields:
                name = key
                target_field = target.get(key) if target is not None else None
                version = target.version if target is not None else "this build"
                value = self.check_value(key, value, target=target_field, version=version)
                note = self.rewrite_note(key, overrides[key], value, target_field, version)
            else:
                raise UnknownFieldError(key, self.suggest(key), self.class_name, config=self.config)
            raw.setdefault(name, {})[key] = overrides[key]
            if name in out and not same_value(out[name].value, value):
                raise ConflictingAliasError(name, raw[name])
            out[name] = Given(value, out[name].given_as + (key,) if name in out else (key,), note)
        return out

    def _from_old(self, old: str, value, target: Schema | None):
        rename = self.renames[old]
        old_versions = self.registry.versions_with(old, config=self.config)
        old_spec = self._spec_of(old, old_versions[-1]) if old_versions else self.fields[rename["new"]]
        value = self.check_value(old, value, old_spec)
        new = rename["new"]
        if "map" not in rename:
            return self.check_value(new, value, target=target.get(new) if target is not None else None,
                                    version=target.version if target is not None else "this build")
        for before, after in rename["map"]:
            if before == value and type(before) is type(value):
                return after
        raise InvalidValueError(old, value, f"cannot be expressed as {new}")

    def _spec_of(self, name: str, version: str) -> CanonicalField:
        f = self.registry.schema(version, config=self.config).get(name)
        return CanonicalField(f.name, f.annotation, f.default, None, f.doc, exact=f.exact)

    # ---- output side ------------------------------------------------------------------------------------------
    def old_name_in(self, name: str, schema: Schema) -> str | None:
        rename = self.renamed_to.get(name)
        return rename["old"] if rename and rename["old"] in schema else None

    def to_old(self, name: str, value):
        """Inverse of a value map (dtype -> bool for preserve_fp32_weights). Raises KeyError if unmappable."""
        rename = self.renamed_to[name]
        if "map" not in rename:
            return value
        for before, after in rename["map"]:
            if after == value:
                return before
        raise KeyError(value)

    def materialize(self, kwargs: Mapping) -> dict:
        """``kwargs`` with dtype names as torch dtypes, for the fields whose annotation is a torch.dtype (torch is
        imported only when there is one)."""
        out = {}
        for name, value in kwargs.items():
            spec = self.fields.get(name)
            kinds = type_of(spec.annotation).kinds() if spec is not None else set()
            out[name] = to_torch(value) if isinstance(value, str) and "dtype" in kinds and "str" not in kinds else value
        return out

    def supported_in(self, name: str) -> str:
        spec = self.fields.get(name)
        among = self.registry.versions_having(self.config)
        have = self.registry.versions_with(name, config=self.config)
        text = describe_range(have, among)
        old = self.renamed_to.get(name, {}).get("old")
        only_old = ([v for v in self.registry.versions_with(old, config=self.config) if v not in set(have)]
                    if old else [])
        if only_old:
            text += f" (as {old} in {describe_range(only_old, among)})"
        if spec is not None and spec.found_in:
            text = f"{text}; {spec.found_in}" if text != "no release" else spec.found_in
        return text


@lru_cache(maxsize=16)
def canonical(reg: Registry, extra: Schema | None = None, *, config: str) -> Canonical:
    return Canonical(reg, extra, config=config)


__all__ = ["Canonical", "CanonicalField", "Field", "Given", "canonical"]
