# SPDX-License-Identifier: Apache-2.0
"""The committed facts: registry.json (generated from wheels), renames.json, rules.json and cross_rules.json (curated),
heads.json (fields of the upstream Megatron-LM branches, generated)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from . import registry_format
from . import version as _v
from .annotations import TypeSpec, type_of
from .configs import CONFIGS, config_class, path_of_class
from .dtypes import dtype_name
from .errors import CompatError, ConfigAbsentError, cli_command

_EXPR_VALUES = {"float('inf')": math.inf, "-float('inf')": -math.inf, 'float("inf")': math.inf,
                "math.inf": math.inf}


def _package() -> str:
    return __name__.rpartition(".")[0]


def load_json(name: str) -> dict:
    """A runtime data file, compat/data/NAME."""
    return package_json(__file__, _package(), name)


def package_json(module_file: str, package: str, name: str) -> dict:
    """data/NAME beside ``module_file`` (``package``'s data/ in a zipped install)."""
    path = Path(module_file).with_name("data") / name
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    from importlib import resources  # a zipped install: 20 ms of imports, so only then

    return json.loads(resources.files(package).joinpath("data", name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Field:
    name: str
    annotation: str
    default: object  # JSON value; dtype defaults become dtype names ("float32")
    default_text: str  # the default as the source writes it
    doc: str = ""
    owner: str = ""  # the class that declares it
    required: bool = False  # no default: every call must pass it
    exact: bool = True  # False when the default is an expression we keep only as text (F.gelu, a factory call)
    enums: tuple = ()  # (Enum class name, its member names) for each Enum the annotation names

    @property
    def type(self) -> TypeSpec:
        return type_of(self.annotation)


@dataclass(frozen=True)
class Check:
    """One ``raise``/``assert`` of ``__post_init__``, as data (see ``compat.postinit``)."""

    kind: str  # raise or assert
    exception: str
    when: tuple[str, ...]
    test: str | None
    message: str | None
    reads: tuple[str, ...]
    skip: str | None  # why it is never pre-checked; None: it is
    line: int
    owner: str  # the class whose __post_init__ has it, or "rules.json" for a curated check
    id: str = ""  # a curated check's name (what its ConstraintError cites)
    evidence: tuple[str, ...] = ()  # a curated check's file:line in the release wheels
    since: str | None = None  # a curated check's release range (``version.within``)
    until: str | None = None
    sets: tuple[tuple[str, object], ...] = ()  # kind "coerce": the values __post_init__ forces when ``when`` holds
    at: int = 0  # extracted: how many writes of Schema.effects run before it
    when_at: tuple[int, ...] = ()  # extracted: the same, for the moment each condition of ``when`` was evaluated

    def where(self) -> str:
        return f"{path_of_class(self.owner, self.owner)}:{self.line}"


@dataclass(frozen=True)
class Write:
    """One write of ``__post_init__`` to a field of ``self``, as data (see ``compat.postinit``)."""

    targets: tuple[str, ...] | None  # the fields it may set; None: any (a setattr it cannot name, a method of self)
    when: tuple[str, ...]
    when_at: tuple[int, ...]
    value: str | None  # what it sets, as the evaluator's language; None: unknown
    maybe: str | None  # why it may not happen when ``when`` holds ("in a loop", "in a try block"); None: it does
    line: int
    owner: str


def write_from_record(record: dict) -> Write:
    targets = record.get("targets")
    return Write(None if targets is None else tuple(targets), tuple(record["when"]), tuple(record["when_at"]),
                 record.get("value"), record.get("maybe"), record.get("line", 0), record.get("owner", ""))


@dataclass(frozen=True, eq=False)
class Schema:
    """What one megatron-core build's config class accepts (eq/hash by identity: schemas are cached)."""

    version: str
    source: str  # "registry", "live" or "candidate"
    fields: tuple[Field, ...]
    post_init_reads: frozenset = frozenset()
    post_init_writes: frozenset = frozenset()
    config: str = field(kw_only=True)
    class_name: str = field(kw_only=True)
    checks: tuple[Check, ...] = ()
    dynamic_writes: bool = False
    bases: tuple[str, ...] = ()
    effects: tuple[Write, ...] = ()  # __post_init__'s writes in program order (a check's ``at`` indexes them)
    enums: dict = field(default_factory=dict)  # Enum class -> {mixin, members, aliases}: those the checks name
    _index: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        self._index.update({f.name: f for f in self.fields})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def get(self, name: str) -> Field | None:
        return self._index.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._index


def field_from_record(record: dict) -> Field:
    base = (record["name"], record["annotation"])
    doc, owner = record.get("doc", ""), record.get("owner", "")
    enums = tuple((k, tuple(v)) for k, v in record.get("enums", {}).items())
    if record.get("required"):
        return Field(*base, None, "<required>", doc, owner, required=True, exact=False, enums=enums)
    if "default_expr" in record:
        text = record["default_expr"]
        if text in _EXPR_VALUES:
            return Field(*base, _EXPR_VALUES[text], text, doc, owner, enums=enums)
        name = dtype_name(text) if text.startswith("torch.") else None
        return Field(*base, name or text, text, doc, owner, exact=name is not None, enums=enums)
    default = record.get("default")
    factory = record.get("factory")
    if isinstance(default, list) and factory != "list":
        default = tuple(default)  # JSON has no tuples; the dataclass default is a tuple
    text = f"{factory}()" if factory and not default else repr(default)
    return Field(*base, default, text, doc, owner, enums=enums)


def check_from_record(record: dict) -> Check:
    """An extracted check (registry.json) or a curated one (rules.json): one shape, curated ones add id and evidence."""
    return Check(record["kind"], record["exception"], tuple(record["when"]), record.get("test"),
                 record.get("message"), tuple(record["reads"]), record.get("skip"), record.get("line", 0),
                 record["owner"], record.get("id", ""), tuple(record.get("evidence", ())), record.get("since"),
                 record.get("until"), tuple(dict(record.get("sets") or ()).items()), record.get("at", 0),
                 tuple(record.get("when_at", ())))


def schema_from_snapshot(version: str, source: str, snap: dict, *, config: str) -> Schema:
    """A Schema from extracted (decoded) facts: ``{"class", "bases", "fields": [...], "post_init": {...}}``."""
    post = snap["post_init"]
    return Schema(version, source, tuple(field_from_record(f) for f in snap["fields"]),
                  frozenset(post["reads"]), frozenset(post["writes"]),
                  tuple(check_from_record(c) for c in post.get("checks", ())), bool(post.get("dynamic_writes")),
                  tuple(snap.get("bases", ())), tuple(write_from_record(w) for w in post.get("effects", ())),
                  post.get("enums", {}), config=config, class_name=snap.get("class", CONFIGS[config].class_name))


class _LazyChecks(tuple):
    """A schema's checks, made into ``Check`` objects on first use (explain needs them for one release only)."""

    def __new__(cls, reg: Registry, refs: list):
        obj = super().__new__(cls)
        obj._reg, obj._refs, obj._made = reg, refs, None
        return obj

    def _all(self) -> tuple:
        if self._made is None:
            self._made = tuple(self._reg._check(*ref) for ref in self._refs)
        return self._made

    def __iter__(self):
        return iter(self._all())

    def __len__(self):
        return len(self._refs)

    def __getitem__(self, item):
        return self._all()[item]

    def __bool__(self):
        return bool(self._refs)

    def __eq__(self, other):
        return tuple(self._all()) == tuple(other)

    __hash__ = tuple.__hash__


class Registry:
    def __init__(self, data: dict):
        if not isinstance(data, dict) or data.get("format") != registry_format.FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise CompatError(f"registry format {found!r} is not format {registry_format.FORMAT}; regenerate it with "
                              f"`{cli_command('registry refresh --only-known')}`")
        self.data = data
        self.releases = {r["version"]: r for r in data["releases"]}
        self._schemas: dict[tuple[str, str], Schema] = {}
        self._fields: dict[int, Field] = {}
        self._checks: dict[int, Check] = {}
        self._with: dict[str, dict[str, list[str]]] = {}
        self._sorted: dict[object, tuple[str, ...]] = {}  # versions() and versions_having(), sorted once

    def versions(self, include_yanked: bool = True) -> list[str]:
        if include_yanked not in self._sorted:
            self._sorted[include_yanked] = tuple(_v.sorted_versions(
                v for v, r in self.releases.items() if include_yanked or not r["yanked"]))
        return list(self._sorted[include_yanked])

    def newest(self) -> str:
        return _v.newest(self.versions(include_yanked=False))

    def is_yanked(self, version: str) -> bool:
        return self.releases[version]["yanked"]

    def has(self, version: str, *, config: str) -> bool:
        return config in self.releases[version]["configs"]

    def schema(self, version: str, *, config: str) -> Schema:
        key = (version, config)
        if key not in self._schemas:
            ref = self.releases[version]["configs"].get(config)
            if ref is None:
                cls = config_class(config).class_name
                raise ConfigAbsentError(f"megatron-core {version} has no {cls} (it exists in "
                                        f"{describe_range(self.versions_having(config))})")
            self._schemas[key] = self._build(version, config, self.data["snapshots"][ref])
        return self._schemas[key]

    def _build(self, version: str, config: str, snap: dict) -> Schema:
        fields = self.fields_of(version, config=config)
        checks = _LazyChecks(self, snap["checks"])
        return Schema(version, "registry", fields, frozenset(fields[i].name for i in snap["reads"]),
                      frozenset(fields[i].name for i in snap["writes"]), checks, snap["dynamic_writes"],
                      tuple(snap["bases"]), tuple(self._write(i, line) for i, line in snap["effects"]),
                      snap["enums"], config=config, class_name=snap["class"])

    def fields_of(self, version: str, *, config: str) -> tuple[Field, ...]:
        """The fields alone (cheaper than ``schema``)."""
        ref = self.releases[version]["configs"][config]
        return tuple(self._field(i) for i in self.data["snapshots"][ref]["fields"])

    def _field(self, i: int) -> Field:
        if i not in self._fields:
            self._fields[i] = field_from_record(self.data["fields"][i])
        return self._fields[i]

    def _check(self, i: int, line: int, at: int = 0, when_at: tuple = ()) -> Check:
        if i not in self._checks:
            self._checks[i] = check_from_record({**self.data["checks"][i], "line": 0})
        return replace(self._checks[i], line=line, at=at, when_at=tuple(when_at))

    def _write(self, i: int, line: int) -> Write:
        return write_from_record({**self.data["writes"][i], "line": line})

    def versions_having(self, config: str) -> list[str]:
        if config not in self._sorted:
            self._sorted[config] = tuple(v for v in self.versions() if self.has(v, config=config))
        return list(self._sorted[config])

    def versions_with(self, name: str, *, config: str) -> list[str]:
        if config not in self._with:
            index: dict[str, list[str]] = {}
            for v in self.versions_having(config):
                for n in self.schema(v, config=config).names:
                    index.setdefault(n, []).append(v)
            self._with[config] = index
        return list(self._with[config].get(name, ()))

    def truncated(self, last: str) -> Registry:
        """The registry as it was when ``last`` was the newest release (used to replay upgrades)."""
        return Registry(registry_format.subset(self.data, [v for v in self.releases if not _v.is_newer(v, last)]))


def describe_range(versions: list[str], among: list[str] | None = None) -> str:
    """'0.14.0-0.19.2' style description of a (sorted) version list; 'no release' when empty.

    With ``among`` (every known version, sorted), gaps show: '0.7.0-0.9.0, 0.14.0-0.19.2'.
    """
    if not versions:
        return "no release"
    if among is None:
        return versions[0] if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in _v.runs(versions, among))


@lru_cache(maxsize=1)
def registry() -> Registry:
    return Registry(load_json("registry.json"))


@lru_cache(maxsize=1)
def _renames_data() -> dict:
    return load_json("renames.json")


def renames(*, config: str) -> tuple[dict, ...]:
    """The accepted renames that apply to ``config`` (its own and those of the configs it inherits from)."""
    from .configs import lineage

    keys = lineage(config)
    return tuple(r for r in _renames_data()["renames"] if r.get("config", "ddp") in keys)


@lru_cache(maxsize=1)
def rules() -> dict:
    return load_json("rules.json")


_NO_CURATED = {"constraints": [], "value_rules": {}, "unreleased_fields": [], "resolver_sets": []}


def curated(config: str) -> dict:
    """rules.json's policy for ``config`` (its checks, value rules, unreleased fields), empty for other classes."""
    data = rules()
    return data if config in data["configs"] else _NO_CURATED


@lru_cache(maxsize=8)
def curated_checks(config: str) -> tuple[Check, ...]:
    return tuple(check_from_record(c) for c in curated(config)["constraints"])


@lru_cache(maxsize=1)
def cross_rules() -> dict:
    return load_json("cross_rules.json")


@lru_cache(maxsize=1)
def heads() -> dict:
    return load_json("heads.json")
