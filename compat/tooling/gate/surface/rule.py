# SPDX-License-Identifier: Apache-2.0
"""The record every detector of the project scan describes itself with (``detectors.rules()`` lists them all).

A ``Rule`` says what one detector sees in a project's source, the kinds of use it records (``uses.Use.how``, and
its ``via`` where that tells them apart), the finding kinds those uses can give on a candidate (kinds.FindingKind),
a short example in Python source, and what it misses on purpose.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    id: str  # the detector's module name
    sees: str  # what in the source it reads
    records: tuple  # the kinds of use it records (Use.how, or "how/via")
    findings: tuple  # the finding kinds its uses can give (kinds.FindingKind), none for a detector that guards
    example: str  # a short example, in Python source
    misses: str  # what it does not see
