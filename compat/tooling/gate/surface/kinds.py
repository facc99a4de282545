# SPDX-License-Identifier: Apache-2.0
"""Finding kinds and guard kinds as ``str`` enums: each member is its text, so JSON output, the scan cache (which
stores guards as plain strings) and comparisons with a stored string see no difference, and a typo in a kind is an
``AttributeError`` instead of a silent miss."""
from __future__ import annotations

import enum


class _TextEnum(str, enum.Enum):
    """A member is equal to, hashes as and prints as its text (``Enum`` alone would hash and print its name)."""

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(str.__str__(self), spec)


class FindingKind(_TextEnum):
    """What fails, or would, on the candidate."""

    MISSING_MODULE = "missing module"
    MISSING_NAME = "missing name"
    MISSING_MEMBER = "missing member"
    UNEXPECTED_KEYWORD = "unexpected keyword"
    MISSING_REQUIRED = "missing required argument"
    TOO_MANY_POSITIONAL = "too many positional arguments"
    OVERRIDE = "override signature"  # megatron calls a project override with what it cannot take
    GIVEN_TWICE = "argument given twice"  # a positional argument now lands on a parameter also passed by keyword
    DEPRECATED = "deprecated"
    NOT_SHIPPED = "not shipped in the wheel"


class GuardKind(_TextEnum):
    """What protects a use (guards.py: how each is recognised)."""

    TRY = "try/except"
    VERSION = "version check"
    PROBE = "hasattr/getattr probe"
    SIGNATURE = "inspect.signature check"
    FLAG = "feature flag"
    AVAILABILITY = "availability check"
    TYPE_CHECKING = "TYPE_CHECKING"
    DEAD = "dead code"
    FALLBACK = "fallback of a try/except ImportError"
    PROBE_ELSE = "fallback of a hasattr/getattr probe"
    PROBE_TAKEN = "branch of a hasattr/getattr probe"  # runs only where the probed names exist
    COMPUTED_SET = "computed setattr"  # an instance's class may set any name on itself (project_classes.py)
    COMPARED = "branch of a comparison with a megatron member"  # ``x == E.m``: runs only where E.m can equal x
    REBOUND = "name the fallback of a try/except ImportError binds again"  # fallbacks.py
    OPTIONAL = "optional import whose availability the file checks"  # fallbacks.py
    SWITCHED = "optional import under a feature switch"  # fallbacks.py
    SWALLOWED = "module that does not import here"  # swallowed.py: the module's own import fails under a guard
