# SPDX-License-Identifier: Apache-2.0
"""Instances of a project's own subclasses of megatron classes (``def f(config: MegatronModelConfig)`` with
``class MegatronModelConfig(TransformerConfig)`` in another file): their members are the project class's own plus
the megatron bases', so ``config.x`` that neither has fails on the candidate.

A file's scan records such reads with ``via=PROJECT_CLASS`` under the project class's name; once every file is
read, ``resolve_project_instances`` turns each into a use of the megatron bases (``via=INSTANCE``: a missing member
is a finding) or drops it. It is dropped unless the class's type is closed: every base, up the project chain, is a
project class or a megatron class; no class anywhere in the project (any ``class X(...P...)`` line, scanned or
not) names the class as a base, so no subclass may add the member; nothing in the chain defines
``__getattr__``/``__getattribute__``; and the member is neither defined nor stored by the chain (its own
attributes, fields, methods, anything it stores on any object) nor stored on such an instance anywhere in the
project. A chain that calls ``setattr`` with a computed name (``COMPUTED``) may set the member: a missing one is
reported guarded (``guards.COMPUTED_SET``), with the class named; its members that the candidate has are checked.
"""
from __future__ import annotations

import re
from dataclasses import replace

from . import guards as g
from .instances import INSTANCE, PROJECT_CLASS
from .line_starts import line_start_matches

BASES = " bases"  # in ProjectScan.classes: each base's "module.Class" when it is a project class, else None
MEGATRON_BASES = " megatron bases"  # the same, each base's megatron paths (None when it is not megatron's)
MEMBERS = " members"  # every name the class body defines or stores on any object ("*": a computed setattr)
COMPUTED = "*setattr"  # in MEMBERS: the class calls setattr (or register_buffer, ...) with a computed name
METHOD_LINES = " method lines"  # the line of each plain method's def, and FILE: the class's file (relative path)
FILE = " file"
CLASS_VALUES = " class values"  # a class-body ``NAME = X``: ("megatron", paths) or ("project", "module.Class");
# None where NAME is bound otherwise too (in a branch of the body, on ``self``): its value is not known
OPEN = frozenset({"*"})  # the MEMBERS of a class with a base neither the project's nor megatron's (not computed)
_OPEN = {"*", "__getattr__", "__getattribute__"}
MAX_CHAIN = 16  # project classes (bases, class-body bindings, forwarders) followed up one chain
_CLASS_AT = re.compile(rb"class[ \t]+\w+[ \t]*\(([^)]*)\)")  # a class line, from its ``class``


def base_names(data: bytes) -> set[str]:
    """The last dotted part of every name written in the bases of a ``class`` line of one file's bytes."""
    names: set[str] = set()
    for match in line_start_matches(data, b"class", _CLASS_AT):
        for part in match.group(1).split(b","):
            word = part.strip().split(b"=")[-1].strip().split(b".")[-1]
            if word:
                names.add(word.decode("ascii", "replace"))
    return names


def closed_chain(origin: str, classes: dict, subclassed: set[str]) -> tuple[tuple, frozenset] | None:
    """(the megatron paths of every megatron base up the chain, every member the project chain has, ``COMPUTED``
    among them where it sets computed names) for a project class no other class subclasses and whose every base
    is known; None when the class may hold more members."""
    if origin.rpartition(".")[2] in subclassed:
        return None
    megatron: list[str] = []
    members: set[str] = set()
    todo, seen = [origin], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        entry = classes.get(current)
        if entry is None or len(seen) > MAX_CHAIN:
            return None
        members |= entry[MEMBERS]
        for project_base, megatron_base in zip(entry[BASES], entry[MEGATRON_BASES]):
            if megatron_base:
                megatron.extend(megatron_base)
            elif project_base:
                todo.append(project_base)
            else:
                return None  # a base neither the project's nor megatron's (a torch class, a mixin): open
    if not megatron or members & _OPEN:
        return None
    return tuple(dict.fromkeys(megatron)), frozenset(members)


def descendants(origins: set, classes: dict) -> set[str]:
    """``origins`` and every project class with one of them up its project chain."""
    subclasses: dict[str, list] = {}  # a project class -> the project classes with it as a base
    for origin, entry in classes.items():
        for base in entry[BASES]:
            if base:
                subclasses.setdefault(base, []).append(origin)
    found: set[str] = set()
    todo = list(origins)
    while todo:  # down from ``origins``, each class once
        origin = todo.pop()
        if origin not in found:
            found.add(origin)
            todo.extend(subclasses.get(origin, ()))
    return found


def megatron_subclass_names(classes: dict, subclassed: set[str]) -> tuple[set[str], set[str]]:
    """The short names of the project classes with a megatron class somewhere up their project chain: (those of a
    closed type (``closed_chain``), the only ones whose uses ``resolve_project_instances`` keeps; the others, which
    matter only where a class line subclasses them, since that subclass may be closed)."""
    found = descendants({origin for origin, entry in classes.items() if any(entry[MEGATRON_BASES])}, classes)
    closed = {origin.rpartition(".")[2] for origin in found if closed_chain(origin, classes, subclassed) is not None}
    return closed, {origin.rpartition(".")[2] for origin in found} - closed


def resolve_project_instances(uses: list, classes: dict, sets: set, subclassed: set[str]) -> list:
    """``uses`` with each ``via=PROJECT_CLASS`` use made a use of its class's megatron bases, or dropped."""
    out, chains = [], {}
    for use in uses:
        if use.via != PROJECT_CLASS:
            out.append(use)
            continue
        origin, _, member = use.name.rpartition(".")
        if origin not in chains:
            chains[origin] = closed_chain(origin, classes, subclassed)
        chain = chains[origin]
        if chain is None or member in chain[1] or f"{origin}.{member}" in sets:
            continue
        paths = [f"{p}.{member}" for p in chain[0]]
        guards = use.guards
        if COMPUTED in chain[1]:
            note = f"{origin.rpartition('.')[2]} sets attributes by computed name (setattr), which may set it"
            guards += ((g.COMPUTED_SET, 0, frozenset(), note),)
        out.append(replace(use, name=paths[0], alternatives=tuple(paths[1:]), via=INSTANCE, guards=guards))
    return out


def constructor(origin: str, classes: dict) -> tuple[tuple, frozenset] | None:
    """(the megatron paths a project class's constructor ends in, the members of its project chain) for a class
    whose chain up to one megatron base defines no ``__init__``/``__new__`` and has one known base per class: a
    keyword the chain's own members (dataclass fields) do not name goes to the megatron base. None otherwise."""
    members: set[str] = set()
    current = origin
    for _ in range(MAX_CHAIN):
        entry = classes.get(current)
        if entry is None or "__init__" in entry or len(entry[BASES]) != 1:
            return None
        own = entry.get(MEMBERS, OPEN)
        if own == OPEN or COMPUTED in own or "__init__" in own or "__new__" in own:
            return None
        members |= own
        if entry[BASES][0] is None:
            megatron = (entry.get(MEGATRON_BASES) or (None,))[0]
            return (tuple(megatron), frozenset(members)) if megatron else None
        current = entry[BASES][0]
    return None


def class_value(origin: str, name: str, classes: dict) -> tuple | None:
    """What ``self.name`` denotes in a method of the project class ``origin`` when the class or a project base sets
    ``name`` in its body (``ConfigClass = TransformerConfig``): the nearest such binding up a one-base chain."""
    current = origin
    for _ in range(MAX_CHAIN):
        entry = classes.get(current)
        if entry is None:
            return None
        values = entry.get(CLASS_VALUES) or {}
        if name in values:
            return tuple(values[name]) if values[name] else None
        if name in entry.get(MEMBERS, OPEN) or entry.get(MEMBERS, OPEN) == OPEN:
            return None  # bound otherwise (a method, ``self.name = ...``), or a class that may hold anything
        if len(entry[BASES]) != 1 or entry[BASES][0] is None:
            return None  # several bases, or a megatron/unknown one: not decided here
        current = entry[BASES][0]
    return None
