# SPDX-License-Identifier: Apache-2.0
"""The build one call resolves for, matched once: the version asked for, the registry release that describes it,
how it matched, and the schema of each config class it needs.

``resolve`` and ``resolve_configs`` make one ``Target`` and pass it down; nothing below them matches a version
again. A live target (a schema read from the installed class) still names the registry release its version label
points to, for the hints that compare the two.
"""
from __future__ import annotations

import warnings

from . import version as _v
from .errors import CompatError, NewerVersionWarning, cli_command
from .registry import Registry, Schema, registry

LIVE = "live"


class Target:
    """``requested``: the version asked for, the installed one, or the newest release when neither; ``release``: the
    registry release that describes it (None for a live build); ``how``: exact, local, base, older-base, newer
    (``version.match_release``) or live; ``live``: config -> the installed class's schema."""

    __slots__ = ("requested", "release", "how", "registry", "notes", "live", "_schemas")

    def __init__(self, requested: str, release: str | None, how: str, registry: Registry,
                 notes: tuple[str, ...] = (), live: dict[str, Schema] | None = None):
        # a plain class, not a dataclass: it is made on every call's import path, and a dataclass costs ~0.4 ms there
        self.requested, self.release, self.how, self.registry = requested, release, how, registry
        self.notes, self.live = tuple(notes), dict(live or {})
        self._schemas: dict[str, Schema | None] = {}

    def __repr__(self) -> str:
        return f"Target({self.requested!r}, release={self.release!r}, how={self.how!r})"

    def schema(self, config: str) -> Schema:
        """The schema of ``config`` for this build (the live one when given); ConfigAbsentError when the release
        has no such class."""
        if config in self.live:
            return self.live[config]
        if self.release is None:
            raise CompatError(f"no registry release describes megatron-core {self.requested}")
        return self.registry.schema(self.release, config=config)

    def nearest_schema(self, config: str) -> Schema | None:
        """The registry schema of ``config`` in the release nearest this build that has the class (another
        config's defaults, as the rules between configs read them); None when no release fits."""
        if config not in self._schemas:
            found = None
            if self.release is not None and self.registry.has(self.release, config=config):
                self._schemas[config] = self.registry.schema(self.release, config=config)
                return self._schemas[config]
            try:
                release, _how = _v.match_release(self.requested, self.registry.versions_having(config))
                found = self.registry.schema(release, config=config)
            except CompatError:
                pass
            self._schemas[config] = found
        return self._schemas[config]

    def label_hint(self, name: str, config: str) -> str:
        """For a live build that lacks ``name``: whether its version label names a release that has it (a
        pre-release or a development commit)."""
        if self.how != LIVE:
            return ""
        release = self.nearest_schema(config)
        if release is None or name not in release:
            return ""
        if _v.parse(release.version).release != _v.parse(self.requested).release:
            return ""
        return (f"this build lacks {name} although its version label says {self.requested} (release "
                f"{release.version} has it): a pre-release or a development commit")


def target_for(version: str | None = None, reg: Registry | None = None, *, live: Schema | None = None) -> Target:
    """Match ``version`` (default: the installed one, else the newest release) to the registry, once; with ``live``
    (a schema of the installed class), the target is that build."""
    reg = reg or registry()
    if live is not None:
        return Target(live.version, None, LIVE, reg, live={live.config: live})
    notes = []
    if version is None:
        version = _v.installed_version()
        if version is None:
            version = reg.newest()
            notes.append(f"megatron-core is not installed; using the newest registry release {version}")
    release, how = _v.match_release(version, reg.versions())
    if how == "newer":
        message = (f"megatron-core {version} is newer than the registry (newest {release}); run "
                   f"`{cli_command(f'gate megatron-core=={version}')}` to review it. Using {release}'s fields.")
        warnings.warn(message, NewerVersionWarning, stacklevel=3)
        notes.append(message)
    elif how != "exact":
        notes.append(f"megatron-core {version} is described by registry release {release} ({how})")
    return Target(str(version), release, how, reg, tuple(notes))


__all__ = ["LIVE", "Target", "target_for"]
