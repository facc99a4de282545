# SPDX-License-Identifier: Apache-2.0
"""Values a release reads as meant although the annotation excludes them, and values it spells differently.

``data/type_acceptances.json`` (generated from the wheels by ``tools/type_acceptances.py``): per config and
field, the releases whose own code reads None (or False) the way the user means it, with the reads as evidence.
``data/value_aliases.json`` (curated, with evidence): a value a release renames (Megatron-LM main normalizes
``experimental_attention_variant='gated_delta_net'`` to ``'gdn'``), so a value is sent as the target spells it.
"""
from __future__ import annotations

from functools import lru_cache

from .configs import lineage
from .registry import load_json


@lru_cache(maxsize=2)
def _by_field(name: str, key: str) -> dict[tuple[str, str], list[dict]]:
    """The rows of ``data/<name>`` under ``key``, by (config, field)."""
    out: dict[tuple[str, str], list[dict]] = {}
    for row in load_json(name)[key]:
        out.setdefault((row["config"], row["field"]), []).append(row)
    return out


def _acceptances() -> dict[tuple[str, str], list[dict]]:
    return _by_field("type_acceptances.json", "acceptances")


def accepted_shapes(config: str, name: str, version: str | None, releases: frozenset | None = None) -> frozenset:
    """The shapes ("none", "false_as_none") ``version`` accepts for ``name``.

    A version that is no registry release (a live dev build; ``releases`` lists the registry's) gets the shapes
    of any release; without a version, likewise (the target decides later)."""
    out = set()
    for key in lineage(config):
        for row in _acceptances().get((key, name), ()):
            if version is None or (releases is not None and version not in releases) or version in row["releases"]:
                out.add(row["shape"])
    return frozenset(out)


def acceptance(config: str, name: str, shape: str) -> dict | None:
    """The data row (releases, evidence) behind one acceptance, for explain and error messages."""
    for key in lineage(config):
        for row in _acceptances().get((key, name), ()):
            if row["shape"] == shape:
                return row
    return None


def value_aliases(config: str, name: str) -> list[dict]:
    aliases = _by_field("value_aliases.json", "aliases")
    return [row for key in lineage(config) for row in aliases.get((key, name), ())]


__all__ = ["acceptance", "accepted_shapes", "value_aliases"]
