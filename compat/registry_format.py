# SPDX-License-Identifier: Apache-2.0
"""The registry file format (format 3): releases -> one snapshot per config class, snapshots -> interned records.

Every field record and every ``__post_init__`` check is stored once (``fields`` and ``checks`` tables, numbered in
order of first appearance; a snapshot lists each of its checks as [record, line, at, when_at], the position
beside the shared record), every ``__post_init__`` write record once (``writes``; a snapshot's ``effects`` list
[record, line] in program order; its ``enums`` are the Enum classes its checks name members of), and every
distinct snapshot once (keyed ``<config>@<first release that has it>``), so a release that changes nothing costs
one line. ``encode`` is a pure function of the releases' facts: a registry rebuilt from the same wheels, or grown
one release at a time by ``gate --accept``, is byte-identical.
"""
from __future__ import annotations

import json

from .configs import CONFIGS

FORMAT = 3
PACKAGE = "megatron-core"
SOURCE = "release wheels, read with ast"
_RELEASE_KEYS = ("version", "yanked", "requires_python")


_POSITION = ("line", "at", "when_at")  # where a check sits in one release: kept beside the shared record


def _key(record) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, allow_nan=False)


def release_facts(version: str, yanked: bool, facts: dict) -> dict:
    """One release in decoded form, from ``extract_candidate`` output."""
    configs = {k: {n: facts[k][n] for n in ("class", "bases", "fields", "post_init")} for k in CONFIGS if k in facts}
    return {"version": version, "yanked": yanked, "requires_python": facts.get("requires_python"), "configs": configs}


def encode(releases: list[dict]) -> dict:
    """The registry data for decoded releases (any order; one entry per version)."""
    fields: list[dict] = []
    checks: list[dict] = []
    writes: list[dict] = []
    ids: dict[str, int] = {}
    check_ids: dict[str, int] = {}
    write_ids: dict[str, int] = {}
    snapshots: dict[str, dict] = {}
    snapshot_keys: dict[str, str] = {}
    out_releases = []

    def intern(table, index, record) -> int:
        key = _key(record)
        if key not in index:
            index[key] = len(table)
            table.append(record)
        return index[key]

    from . import version as _v  # packaging: only when writing a registry

    for release in sorted(releases, key=lambda r: _v.parse(r["version"])):
        refs = {}
        for config, facts in sorted(release["configs"].items(), key=lambda kv: list(CONFIGS).index(kv[0])):
            post = facts["post_init"]
            position = {f["name"]: i for i, f in enumerate(facts["fields"])}
            snap = {"class": facts["class"], "bases": list(facts["bases"]),
                    "fields": [intern(fields, ids, f) for f in facts["fields"]],
                    "reads": sorted(position[n] for n in post["reads"]),
                    "writes": sorted(position[n] for n in post["writes"]),
                    "dynamic_writes": bool(post["dynamic_writes"]),
                    "checks": [[intern(checks, check_ids, {k: v for k, v in c.items() if k not in _POSITION}),
                                c["line"], c.get("at", 0), c.get("when_at", [])] for c in post["checks"]],
                    "effects": [[intern(writes, write_ids, {k: v for k, v in w.items() if k != "line"}), w["line"]]
                                for w in post.get("effects", ())],
                    "enums": post.get("enums", {})}
            content = _key(snap)
            if content not in snapshot_keys:
                snapshot_keys[content] = f"{config}@{release['version']}"
                snapshots[snapshot_keys[content]] = snap
            refs[config] = snapshot_keys[content]
        out_releases.append({**{k: release[k] for k in _RELEASE_KEYS}, "configs": refs})
    return {"format": FORMAT, "package": PACKAGE, "source": SOURCE, "releases": out_releases,
            "snapshots": snapshots, "fields": fields, "checks": checks, "writes": writes}


def decode_snapshot(data: dict, key: str) -> dict:
    snap = data["snapshots"][key]
    fields = [data["fields"][i] for i in snap["fields"]]
    return {"class": snap["class"], "bases": snap["bases"], "fields": fields,
            "post_init": {"reads": sorted(fields[i]["name"] for i in snap["reads"]),
                          "writes": sorted(fields[i]["name"] for i in snap["writes"]),
                          "dynamic_writes": snap["dynamic_writes"],
                          "checks": [{**data["checks"][i], "line": line, "at": at, "when_at": when_at}
                                     for i, line, at, when_at in snap["checks"]],
                          "effects": [{**data["writes"][i], "line": line} for i, line in snap["effects"]],
                          "enums": snap["enums"]}}


def decode(data: dict) -> list[dict]:
    """The releases of registry data, each with full facts per config."""
    if data.get("format") != FORMAT:
        raise ValueError(f"registry format {data.get('format')!r}; this mcore-compat reads format {FORMAT}")
    return [{**{k: r[k] for k in _RELEASE_KEYS},
             "configs": {c: decode_snapshot(data, key) for c, key in r["configs"].items()}} for r in data["releases"]]


def add_release(data: dict, version: str, yanked: bool, facts: dict) -> dict:
    """``data`` plus one release (replacing an entry of that version), in the deterministic form."""
    releases = [r for r in (decode(data) if data else []) if r["version"] != version]
    return encode(releases + [release_facts(version, yanked, facts)])


def subset(data: dict, versions) -> dict:
    """The registry restricted to ``versions`` (used to replay upgrades)."""
    keep = set(versions)
    return encode([r for r in decode(data) if r["version"] in keep])


def dumps(data: dict) -> str:
    """One record per line: small diffs when a release is added, and no pretty-printing cost."""
    def line(value) -> str:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)

    parts = ["{"]
    items = list(data.items())
    for n, (key, value) in enumerate(items):
        end = "," if n < len(items) - 1 else ""
        if isinstance(value, list) and value and isinstance(value[0], dict):
            body = ",\n".join(f"  {line(v)}" for v in value)
            parts.append(f" {line(key)}: [\n{body}\n ]{end}")
        elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            body = ",\n".join(f"  {line(k)}: {line(v)}" for k, v in value.items())
            parts.append(f" {line(key)}: {{\n{body}\n }}{end}")
        else:
            parts.append(f" {line(key)}: {line(value)}{end}")
    parts.append("}")
    return "\n".join(parts) + "\n"


__all__ = ["FORMAT", "add_release", "decode", "decode_snapshot", "dumps", "encode", "release_facts", "subset"]
