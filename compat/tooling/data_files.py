# SPDX-License-Identifier: Apache-2.0
"""The tooling's own data, compat/tooling/data/: what only the gate reads (the lanes' verdicts, the recorded plain
installs, the releases' wheel metadata), kept out of the runtime's compat/data/ so that vendor never copies it."""
from __future__ import annotations

from ..registry import package_json

DATA_DIR = "compat/tooling/data"  # as messages name it


def load_json(name: str) -> dict:
    """compat/tooling/data/NAME."""
    return package_json(__file__, __package__, name)


__all__ = ["DATA_DIR", "load_json"]
