# SPDX-License-Identifier: Apache-2.0
"""Members read off a parameter annotated with a megatron class: ``def f(config: TransformerConfig)``
may be passed any subclass, so ``config.x`` that the class lacks fails only where nothing can have given the object
an ``x``:

- no subclass of the class in the candidate has ``x`` (a class whose source spells the class's name);
- no project class with the class up its chain may add members it does not name (``__getattr__``, a computed
  ``setattr``, a base neither the project's nor megatron's);
- no project file names ``x`` as something it defines or stores: ``obj.x = ...`` (or ``+=``), ``def x``, ``x =``
  or ``x:`` at the start of a line (a class body's field or attribute, and any local of that name), or ``"x"``
  quoted (``setattr(obj, "x", ...)``, a key of a dict that may become attributes). A name-level test, read only
  for members the candidate lacks, and so coarser than the scan: precision over recall.

An annotation is not enforced: a parameter annotated ``ModuleSpec`` that is handed a ``TransformerBlockSubmodules``
reads ``layer_specs`` fine. So the read is a break only where the release the project runs on now (``--against``,
else the newest cached release before the candidate, as for overrides) has the member by the same rules and the
candidate no longer does (``kept_where_it_worked``); without such a release nothing is said.

check.py evaluates such a use as ``via=ANNOTATED_READ`` (lookup side: ``lacks_everywhere``) once ``ProjectNames``
has said the project does not define the member; a use whose member the project may define stays ``ANNOTATED``
(members the class has are checked, never a missing one).
"""
from __future__ import annotations

import re
from pathlib import Path

from ....errors import CompatError
from ...archive import read_file
from . import project
from .lookup import Surface, Target
from .project_classes import BASES, COMPUTED, MAX_CHAIN, MEGATRON_BASES, MEMBERS

ANNOTATED_READ = "read off a parameter annotated as a megatron class"  # a Use's via, set in check.py
_OPENING = {"*", COMPUTED, "__getattr__", "__getattribute__"}  # members that let a class have any name


def kept_where_it_worked(findings: list, previous: Surface | None, evaluate) -> list:
    """``findings`` without the ``ANNOTATED_READ`` ones whose member ``previous`` lacks too (or with no
    ``previous``): those say more about the annotation than about the candidate. ``evaluate``: check.evaluate."""
    out = []
    for f in findings:
        use = getattr(f, "_use", None)
        if use is not None and use.via == ANNOTATED_READ and (
                previous is None or any(x.name == f.name for x in evaluate(use, previous)[0])):
            continue
        out.append(f)
    return out


def lacks_everywhere(surface: Surface, qual: str, member: str) -> bool:
    """No class of the candidate with ``qual`` in its MRO (``qual`` aside) has ``member``."""
    short = qual.rpartition(".")[2]
    spelling = getattr(surface.classes, "spelling", None)
    pairs = spelling(short) if spelling else list(surface.classes.items())
    wanted = Target("class", qual)
    for other, _entry in pairs:
        if other != qual and wanted in surface.mro(other) and surface.class_member(other, member):
            return False
    return True


class ProjectNames:
    """What a project may define, asked per member (the files are read once, on the first question)."""

    def __init__(self, sources: list, classes: dict):
        self._sources = sources  # (rel, path) of every Python file the scan read
        self._classes = classes  # ProjectScan.classes
        self._data: list[bytes | None] | None = None
        self._answers: dict = {}  # member -> defines; (id(surface), class) -> opened

    def defines(self, member: str) -> bool:
        if member not in self._answers:
            self._answers[member] = self._spelled_as_defined(member)
        return self._answers[member]

    def _spelled_as_defined(self, member: str) -> bool:
        if self._data is None:
            self._data = [_read(path) for _rel, path in self._sources]
        word = member.encode("ascii", "replace")
        name = re.escape(word)
        pattern = re.compile(rb"\.\s*" + name + rb"\s*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)|"
                             rb"['\"]" + name + rb"['\"]|"
                             rb"^[ \t]*" + name + rb"[ \t]*(?::|=(?!=))|"
                             rb"\bdef[ \t]+" + name + rb"\b", re.M)
        return any(data is None or (word in data and pattern.search(data)) for data in self._data)

    def opened(self, surface: Surface, qual: str) -> bool:
        """A project class with ``qual`` up its chain (through megatron bases) that may add any member."""
        key = (id(surface), qual)
        if key not in self._answers:
            self._answers[key] = self._opened(surface, qual)
        return self._answers[key]

    def _opened(self, surface: Surface, qual: str) -> bool:
        wanted = Target("class", qual)
        for origin, entry in self._classes.items():
            if not (entry.get(MEMBERS, frozenset()) & _OPENING):
                continue
            for base in _megatron_bases(origin, self._classes):
                res = surface.resolve(base)
                if res.ok and any(t.kind == "class" and wanted in surface.mro(t.name) for t in res.targets):
                    return True
        return False


def _megatron_bases(origin: str, classes: dict) -> list[str]:
    """The first megatron path of every megatron base up a project class's project chain."""
    found, todo, seen = [], [origin], set()
    while todo and len(seen) < MAX_CHAIN:
        current = todo.pop()
        entry = classes.get(current)
        if current in seen or entry is None:
            continue
        seen.add(current)
        for project_base, megatron_base in zip(entry.get(BASES, ()), entry.get(MEGATRON_BASES, ())):
            if megatron_base:
                found.append(megatron_base[0])
            elif project_base:
                todo.append(project_base)
    return found


def _read(path: Path) -> bytes | None:
    """A project file's bytes, read under the scan's cap (project.MAX_FILE_BYTES); None for a larger one, which
    may define anything (the scan skipped and listed it); b"" for one that cannot be read."""
    try:
        if path.stat().st_size > project.MAX_FILE_BYTES:
            return None
        return read_file(path, project.MAX_FILE_BYTES, "project file")
    except (CompatError, OSError):
        return b""
