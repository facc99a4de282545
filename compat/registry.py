"""The committed facts: registry.json (generated from wheels), renames.json and rules.json (curated)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from . import version as _v
from .dtypes import canonical_default


def _package() -> str:
    return __name__.rpartition(".")[0]


def load_json(name: str) -> dict:
    return json.loads(resources.files(_package()).joinpath("data", name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Field:
    name: str
    annotation: str
    default: object  # JSON value; dtype defaults become dtype names ("float32")
    default_text: str  # the default as the source writes it
    doc: str = ""


@dataclass(frozen=True)
class Schema:
    """What one megatron-core build's DistributedDataParallelConfig accepts."""

    version: str
    source: str  # "registry" or "live"
    fields: tuple[Field, ...]
    post_init_reads: frozenset = frozenset()
    post_init_writes: frozenset = frozenset()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def get(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None


def field_from_record(record: dict) -> Field:
    if "default_expr" in record:
        text = record["default_expr"]
        default = canonical_default(text)
    else:
        default = record.get("default")
        if isinstance(default, list):  # JSON has no tuples; the dataclass default is a tuple
            default = tuple(default)
        text = repr(default)
    return Field(record["name"], record["annotation"], default, text, record.get("doc", ""))


def schema_from_snapshot(version: str, source: str, snap: dict) -> Schema:
    """A Schema from extracted facts: ``{"fields": [...], "post_init_reads": [...], "post_init_writes": [...]}``."""
    return Schema(version, source, tuple(field_from_record(f) for f in snap["fields"]),
                  frozenset(snap["post_init_reads"]), frozenset(snap["post_init_writes"]))


class Registry:
    def __init__(self, data: dict):
        self.data = data
        self.releases = {r["version"]: r for r in data["releases"]}
        self._schemas: dict[str, Schema] = {}

    def versions(self, include_yanked: bool = True) -> list[str]:
        return _v.sorted_versions(v for v, r in self.releases.items() if include_yanked or not r["yanked"])

    def newest(self) -> str:
        return _v.newest(self.versions(include_yanked=False))

    def is_yanked(self, version: str) -> bool:
        return self.releases[version]["yanked"]

    def schema(self, version: str) -> Schema:
        if version not in self._schemas:
            snap = self.data["ddp_snapshots"][self.releases[version]["ddp"]]
            self._schemas[version] = schema_from_snapshot(version, "registry", snap)
        return self._schemas[version]

    def optimizer_fields(self, version: str) -> tuple[Field, ...]:
        snap = self.data["optimizer_snapshots"][self.releases[version]["optimizer"]]
        return tuple(field_from_record(f) for f in snap["fields"])

    def versions_with(self, name: str) -> list[str]:
        return [v for v in self.versions() if name in self.schema(v)]

    def truncated(self, last: str) -> "Registry":
        """The registry as it was when ``last`` was the newest release (used to replay upgrades)."""
        keep = [r for r in self.data["releases"] if not _v.is_newer(r["version"], last)]
        used_ddp, used_opt = {r["ddp"] for r in keep}, {r["optimizer"] for r in keep}
        return Registry({**self.data, "releases": keep,
                         "ddp_snapshots": {k: s for k, s in self.data["ddp_snapshots"].items() if k in used_ddp},
                         "optimizer_snapshots": {k: s for k, s in self.data["optimizer_snapshots"].items()
                                                 if k in used_opt}})


def describe_range(versions: list[str]) -> str:
    """'0.14.0-0.19.2' style description of a (sorted) version list; 'no release' when empty."""
    if not versions:
        return "no release"
    return versions[0] if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"


@lru_cache(maxsize=1)
def registry() -> Registry:
    return Registry(load_json("registry.json"))


@lru_cache(maxsize=1)
def renames() -> tuple[dict, ...]:
    return tuple(load_json("renames.json")["renames"])


@lru_cache(maxsize=1)
def rules() -> dict:
    return load_json("rules.json")
