# SPDX-License-Identifier: Apache-2.0
"""The companion catalogue (compat/tooling/data/companions.json), the pins they are checked against, and the
recorded real installs (compat/tooling/data/companion_installs.json)."""
from __future__ import annotations

from dataclasses import dataclass

from .... import version as _v
from ....errors import CompatError
from ....registry import registry
from ...data_files import DATA_DIR, load_json

CATALOGUE = "companions.json"
INSTALLS = "companion_installs.json"
OLDEST_PIN = "0.7.0"  # the first release with the config classes; the matrix pins from here


class CompanionError(CompatError):
    """An unknown companion, or a release the index does not have."""


@dataclass(frozen=True)
class Companion:
    name: str
    package: str  # the distribution on the index
    roots: tuple[str, ...]  # top-level import packages the wheel installs (what is read)
    why: str
    extras: tuple[str, ...] = ()  # what a user installs it with (mbridge[megatron] brings transformers)

    def requirement(self, release: str) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.package}{extras}=={release}"


def companions() -> dict[str, Companion]:
    data = load_json(CATALOGUE)["companions"]
    return {name: Companion(name, entry["package"], tuple(entry["roots"]), entry["why"], tuple(entry.get("extras", ())))
            for name, entry in data.items()}


def companion(name: str) -> Companion:
    known = companions()
    if name not in known:
        raise CompanionError(f"--companion {name!r}: not a known companion; known: {', '.join(sorted(known))} "
                             f"({DATA_DIR}/{CATALOGUE})")
    return known[name]


def default_pins() -> list[str]:
    """The newest non-yanked final release of each minor series in the registry, from 0.7.0: the matrix's rule for
    its pins (matrix.yaml), derived here because an installed package has no matrix.yaml."""
    newest: dict[tuple[int, int], str] = {}
    for v in registry().versions(include_yanked=False):
        parsed = _v.parse(v)
        if parsed.is_prerelease or parsed.is_devrelease or not _v.at_least(parsed, OLDEST_PIN):
            continue
        key = (parsed.major, parsed.minor)
        if key not in newest or _v.is_newer(v, newest[key]):
            newest[key] = v
    return _v.sorted_versions(newest.values())


def recorded_installs(name: str) -> dict[tuple[str, str], dict]:
    """(companion release, pin) -> what installing the pair and importing its megatron modules did on CPU, as
    the companion sessions recorded it (``{"outcome": "ok" | "fails" | "cannot-install", "detail": ...}``)."""
    cells = load_json(INSTALLS).get("cells", [])
    return {(c["release"], c["pin"]): c for c in cells if c.get("companion") == name}
