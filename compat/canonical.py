"""The canonical DDPConfig schema: every field any release has, under its newest name, with type checks."""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from .dtypes import accepted_spellings, dtype_name
from .errors import ConflictingAliasError, FieldTypeError, InvalidValueError, UnknownFieldError
from .registry import Field, Registry, Schema, describe_range, renames, rules


@dataclass(frozen=True)
class CanonicalField:
    name: str
    annotation: str
    default: object  # the behaviour of a build that lacks the field (its default when introduced)
    introduced: str | None  # None: no release has it
    doc: str = ""
    found_in: str = ""  # where an unreleased field exists

    @property
    def kind(self) -> tuple[str, bool]:
        """(base kind, optional) read off the annotation."""
        text = self.annotation.replace("typing.", "")
        optional = text.startswith("Optional[") or self.default is None
        inner = text[len("Optional["):-1] if text.startswith("Optional[") else text
        if inner.lower().startswith("tuple[str"):
            return "str_tuple", optional
        return {"bool": "bool", "int": "int", "float": "float", "str": "str",
                "torch.dtype": "dtype"}.get(inner, "any"), optional


@dataclass(frozen=True)
class Given:
    value: object
    given_as: tuple[str, ...]


class Canonical:
    def __init__(self, reg: Registry, extra: Schema | None = None):
        self.registry = reg
        self.renames = {r["old"]: r for r in renames()}
        self.renamed_to = {r["new"]: r for r in renames()}
        self.value_rules = rules()["value_rules"]
        self.fields: dict[str, CanonicalField] = {}
        for version in reg.versions():
            for f in reg.schema(version).fields:
                if f.name in self.renames:
                    continue
                first = self.fields[f.name].introduced if f.name in self.fields else version
                self.fields[f.name] = CanonicalField(f.name, f.annotation, f.default, first, f.doc)
        for u in rules()["unreleased_fields"]:
            self.fields.setdefault(u["name"], CanonicalField(u["name"], u["annotation"], u["default"], None,
                                                             u.get("doc", ""), u["found_in"]))
        for f in (extra.fields if extra else ()):
            if f.name not in self.fields and f.name not in self.renames:
                self.fields[f.name] = CanonicalField(f.name, f.annotation, f.default, None, f.doc,
                                                     f"this build ({extra.version}, {extra.source})")

    # ---- input side -------------------------------------------------------------------------------------------
    def suggest(self, key: str) -> str | None:
        names = list(self.fields) + list(self.renames)
        hits = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
        return hits[0] if hits else None

    def check_value(self, name: str, value, spec: CanonicalField | None = None):
        """Validate one value against the field's type and value rules; return the canonical value."""
        spec = spec or self.fields[name]
        kind, optional = spec.kind
        if value is None:
            if optional or kind == "any":
                return None
            raise FieldTypeError(name, value, f"{kind} (None is not allowed)")
        value = _check_kind(name, kind, value)
        rule = self.value_rules.get(name, {})
        if "min" in rule and value < rule["min"]:
            raise InvalidValueError(name, value, f"must be >= {rule['min']}")
        if "choices" in rule and value not in rule["choices"]:
            raise InvalidValueError(name, value, f"must be one of {', '.join(map(repr, rule['choices']))}")
        return value

    def canonicalize(self, overrides) -> dict[str, Given]:
        """User overrides (canonical names or aliases) -> canonical name: Given. Raises on anything bad."""
        if overrides is None:
            return {}
        if not isinstance(overrides, Mapping):
            raise FieldTypeError("<overrides>", overrides, "a mapping of DistributedDataParallelConfig fields")
        out: dict[str, Given] = {}
        raw: dict[str, dict] = {}
        for key, value in overrides.items():
            if not isinstance(key, str):
                raise FieldTypeError(repr(key), key, "a str field name")
            if key in self.renames:
                name, value = self.renames[key]["new"], self._from_old(key, value)
            elif key in self.fields:
                name, value = key, self.check_value(key, value)
            else:
                raise UnknownFieldError(key, self.suggest(key))
            raw.setdefault(name, {})[key] = overrides[key]
            if name in out and out[name].value != value:
                raise ConflictingAliasError(name, raw[name])
            out[name] = Given(value, out[name].given_as + (key,) if name in out else (key,))
        return out

    def _from_old(self, old: str, value):
        rename = self.renames[old]
        old_versions = self.registry.versions_with(old)
        old_spec = self._spec_of(old, old_versions[-1]) if old_versions else self.fields[rename["new"]]
        value = self.check_value(old, value, old_spec)
        if "map" not in rename:
            return self.check_value(rename["new"], value)
        for before, after in rename["map"]:
            if before == value:
                return after
        raise InvalidValueError(old, value, f"cannot be expressed as {rename['new']}")

    def _spec_of(self, name: str, version: str) -> CanonicalField:
        f = self.registry.schema(version).get(name)
        return CanonicalField(f.name, f.annotation, f.default, None, f.doc)

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

    def supported_in(self, name: str) -> str:
        spec = self.fields.get(name)
        text = describe_range(self.registry.versions_with(name))
        old = self.renamed_to.get(name, {}).get("old")
        only_old = [v for v in self.registry.versions_with(old)
                    if name not in self.registry.schema(v)] if old else []
        if only_old:
            text += f" (as {old} in {describe_range(only_old)})"
        if spec is not None and spec.found_in:
            text = f"{text}; {spec.found_in}" if text != "no release" else spec.found_in
        return text


def _check_kind(name: str, kind: str, value):
    if kind == "bool":
        if not isinstance(value, bool):
            raise FieldTypeError(name, value, "bool")
    elif kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldTypeError(name, value, "int")
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldTypeError(name, value, "float")
        value = float(value)
    elif kind == "str":
        if not isinstance(value, str):
            raise FieldTypeError(name, value, "str")
    elif kind == "dtype":
        canonical = dtype_name(value)
        if canonical is None:
            raise FieldTypeError(name, value, f"a torch.dtype or one of {accepted_spellings()}")
        value = canonical
    elif kind == "str_tuple":
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or \
                not all(isinstance(v, str) for v in value):
            raise FieldTypeError(name, value, "a list or tuple of str")
        value = tuple(value)
    return value


@lru_cache(maxsize=8)
def canonical(reg: Registry, extra: Schema | None = None) -> Canonical:
    return Canonical(reg, extra)


__all__ = ["Canonical", "CanonicalField", "Field", "Given", "canonical"]
