# SPDX-License-Identifier: Apache-2.0
"""How the gate treats each class of ``compat.configs.CONFIGS``: one diff path, the differences as data.

Keys of a policy:
  rules         "ddp": rules.json's constraints, resolver fields and value rules pin fields (only DDPConfig has them)
  read_by_shim  fields the shim reads off a user's config by name (their removal is breaking)
  added         level of a new optional field that does not look like a rename: "decision" (the shim refuses a
                non-default value on older releases until --accept) or "info" (the class is passed through)
  checks        "each": one entry per newly read field; "summary": one line for the class (classes of 300 fields)
  own_fields    report only fields the class declares itself (a subclass: its parent's fields are diffed there)
"""
from __future__ import annotations

from ...configs import CONFIGS
from ..extract import OPTIMIZER_FIELDS_OF_INTEREST

_DEFAULT = {"rules": None, "read_by_shim": (), "added": "decision", "checks": "each", "own_fields": False}

POLICY: dict[str, dict] = {
    "ddp": {"rules": "ddp"},
    "optimizer": {"read_by_shim": OPTIMIZER_FIELDS_OF_INTEREST, "added": "info"},
    "adam_optimizer": {"added": "info", "own_fields": True},
    "sgd_optimizer": {"added": "info", "own_fields": True},
    "transformer": {"added": "info", "checks": "summary"},
    "mla": {"added": "info", "checks": "summary", "own_fields": True},
}


def policy(key: str) -> dict:
    """The policy of config ``key``; a class added to CONFIGS without one gets the strict default."""
    return {**_DEFAULT, **POLICY.get(key, {})}


def order() -> list[str]:
    """Class names in report order (CONFIGS order)."""
    return [c.class_name for c in CONFIGS.values()]
