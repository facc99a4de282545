# SPDX-License-Identifier: Apache-2.0
"""Project classes named through a module that imports them (``from pkg.core import Bridge``, where
``pkg/core/__init__.py`` has ``from .bridge import Bridge``): the key of the module that defines the class, a few
links deep. A module is read (bounded, parsed once) only when a base names a class through it.
"""
from __future__ import annotations

from ....errors import CandidateError
from ...pysource import parse_source
from .definitions import named_classes, project_module
from .project_classes import BASES

REEXPORT_ROUNDS = 4  # re-exports through project modules, followed this many links deep


class Reexports:
    """Project classes named through a module that imports them (``from pkg.core import Bridge``, where
    ``pkg/core/__init__.py`` has ``from .bridge import Bridge``): the key of the module that defines the class, a
    few links deep. A module is read (bounded, parsed once) only when a base names a class through it."""

    def __init__(self, names_of: dict, data_of, own: tuple):
        owners: dict[str, set] = {}
        for rel, names in names_of.items():
            for name in names:
                owners.setdefault(name, set()).add(rel)
        self.file_of = {name: next(iter(rels)) for name, rels in owners.items() if len(rels) == 1}
        self.data_of, self.own = data_of, own
        self.named: dict[str, dict] = {}  # rel -> _named_classes of it ({} when it cannot be read)

    def follow(self, key: str, classes: dict) -> str | None:
        for _ in range(REEXPORT_ROUNDS):
            if key in classes:
                return key
            module, _, name = key.rpartition(".")
            rel = self.file_of.get(module)
            if rel is None:
                return None
            if rel not in self.named:
                data = self.data_of(rel)
                try:
                    tree = parse_source(data, rel) if data is not None else None
                except CandidateError:
                    tree = None
                self.named[rel] = named_classes(tree, *project_module(rel), self.own) if tree is not None else {}
            found = self.named[rel].get(name)
            if found is None or found == key:
                return None
            key = found
        return key if key in classes else None

    def alias(self, keys, classes: dict) -> None:
        """Make each of ``keys`` (project classes the uses name: a spec's class, an instance's) that names a class
        through another module a key of that class's entry."""
        for key in keys:
            if key and key not in classes:
                found = self.follow(key, classes)
                if found is not None:
                    classes[key] = classes[found]

    def resolve(self, classes: dict) -> None:
        """Rewrite, in ``classes``, each base named through another module to the key of its defining module."""
        for key, entry in list(classes.items()):
            bases = entry[BASES]
            if not any(b and b not in classes for b in bases):
                continue
            resolved = tuple(b if not b or b in classes else (self.follow(b, classes) or b) for b in bases)
            if resolved != tuple(bases):
                classes[key] = {**entry, BASES: resolved}
