# SPDX-License-Identifier: Apache-2.0
"""Resolve dotted megatron names and call signatures against a candidate model (see ``model.py``).

Every lookup returns *alternatives*: a name bound in several branches of the candidate (``try/except``,
``if HAVE_TE:``) may be any of them, so a name is missing only when it is missing in all of them, and a keyword is
unexpected only when no alternative accepts it.
"""
from __future__ import annotations

import builtins
import enum
import functools
from dataclasses import dataclass, field

from .model import (
    ALL,
    ATTRS,
    BASES,
    DATACLASS,
    DC_FIELDS,
    DC_INIT,
    DEPRECATED,
    HAS_GETATTR,
    MODULE,
    NAMES,
    PARAMS,
    STAR,
    VARARGS,
    VARKW,
    bindings,
    parse_fields,
    parse_signature,
)

# Bases whose attribute sets are known without reading them (stdlib); any other outside base leaves a class open.
_CLOSED_BASES = {"object": object, "Enum": enum.Enum, "IntEnum": enum.IntEnum, "Flag": enum.Flag,
                 "IntFlag": enum.IntFlag, "StrEnum": getattr(enum, "StrEnum", enum.Enum), "str": str, "int": int,
                 "ABC": object, "abc.ABC": object}
_MODULE_DUNDERS = {"__name__", "__file__", "__path__", "__spec__", "__loader__", "__package__", "__doc__",
                   "__dict__", "__builtins__", "__cached__"}
_ENUM_BASES = {"Enum", "IntEnum", "Flag", "IntFlag", "StrEnum"}


@dataclass(frozen=True)
class Target:
    """What a name denotes: a module, a class, a function (with its signature), or something opaque."""
    kind: str  # module | class | function | opaque
    name: str = ""
    sig: str | None = None  # compact signature text (model.parse_signature)
    how: str = ""  # for functions: f plain, m method, s static, c classmethod, p property


OPAQUE = Target("opaque")
_CYCLE_RESULT = {"mm": [OPAQUE], "cm": [OPAQUE], "bases": [OPAQUE], "enum": False}


@dataclass
class Resolution:
    targets: list  # alternatives; empty when missing
    missing: str | None = None  # the segment that was not found
    container: Target | None = None  # where it was looked for
    resolved: str = ""  # the prefix that did resolve
    notes: list = field(default_factory=list)  # deprecations met on the way

    @property
    def ok(self) -> bool:
        return bool(self.targets)


_IN_PROGRESS = object()  # a lookup on the stack: meeting it again is a cycle


class Surface:
    """Lookups against one candidate model. Each lookup (a module's or class's member, a class's bases, whether it
    is an enum) is computed once per Surface and memoised, and runs on an explicit stack rather than Python's: a
    star-import DAG, a class lattice or a re-export chain thousands of modules long costs one visit per module and
    class, never a path each, and never a RecursionError. A lookup met again while it is still being computed (an
    import or inheritance cycle) gives what the cycle gave before: an open result (OPAQUE; not an enum)."""

    def __init__(self, model: dict):
        self.model = model
        self.modules: dict = model["modules"]
        self.classes: dict = model["classes"]
        self.version = model.get("version")
        self.label = model.get("label", "")
        self._memo: dict = {}
        self._children: dict | None = None

    # ---- names ---------------------------------------------------------------------------------------------
    def resolve(self, name: str) -> Resolution:
        """What ``name`` denotes (memoised: a name used on many lines is resolved once; read the result, never
        change it)."""
        key = ("resolve", name)
        if key not in self._memo:
            self._memo[key] = self._resolve(name)
        return self._memo[key]

    def _resolve(self, name: str) -> Resolution:
        parts = name.split(".")
        if parts[0] != "megatron":
            return Resolution([OPAQUE])
        if "megatron" not in self.modules:
            return Resolution([], parts[0], None, "")
        current, notes = [Target("module", "megatron")], []
        for i, part in enumerate(parts[1:], start=1):
            found: dict = {}
            for target in current:
                found.update(dict.fromkeys(self.member(target, part)))
                note = self.deprecation(target, part)
                if note and note not in notes:
                    notes.append(note)
            if not found:
                return Resolution([], part, current[0], ".".join(parts[:i]), notes)
            if OPAQUE in found:
                return Resolution([OPAQUE], notes=notes)
            current = list(found)
        return Resolution(current, notes=notes)

    def member(self, target: Target, name: str) -> list:
        return self._run(self._member_g(target, name))

    # ``seen`` is ignored: cycles are found by the lookup machine (kept for callers of the recursive form)
    def module_member(self, module: str, name: str, seen=None) -> list:
        return self._query(("mm", module, name))

    def class_member(self, qual: str, name: str, seen=None) -> list:
        return self._query(("cm", qual, name))

    def bases(self, qual: str) -> list:
        """Each base as a class Target, a stdlib/builtin class, or OPAQUE (an outside base)."""
        return self._query(("bases", qual))

    def is_enum(self, qual: str, seen=None) -> bool:
        return self._query(("enum", qual))

    # ---- the lookup machine --------------------------------------------------------------------------------
    # Each lookup is a generator that yields the key of a lookup it needs and is sent that lookup's result.
    def _query(self, key: tuple):
        value = self._memo.get(key)
        if value is not None and value is not _IN_PROGRESS:
            return value
        return self._run(self._start(key), key)

    def _run(self, generator, key: tuple | None = None):
        """Drive ``generator`` and every lookup it needs to completion, memoising each (no Python recursion)."""
        memo = self._memo
        if key is not None:
            memo[key] = _IN_PROGRESS
        stack, value = [(key, generator)], None
        while True:
            current_key, current = stack[-1]
            try:
                needed = current.send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                if current_key is not None:
                    memo[current_key] = value
                if not stack:
                    return value
                continue
            known = memo.get(needed)
            if known is _IN_PROGRESS:
                value = _CYCLE_RESULT[needed[0]]
            elif known is not None:
                value = known
            else:
                memo[needed] = _IN_PROGRESS
                stack.append((needed, self._start(needed)))
                value = None

    def _start(self, key: tuple):
        kind, *args = key
        return {"mm": self._module_member_g, "cm": self._class_member_g, "bases": self._bases_g,
                "enum": self._is_enum_g}[kind](*args)

    def _member_g(self, target: Target, name: str):
        if target.kind == "module":
            return (yield ("mm", target.name, name))
        if target.kind == "class":
            return (yield ("cm", target.name, name))
        return [OPAQUE]

    def _chain_g(self, targets: list, parts: list):
        """The members ``a.b.c`` of each of ``targets``, part by part (all alternatives)."""
        for part in parts:
            found: dict = {}
            for t in targets:
                found.update(dict.fromkeys((yield from self._member_g(t, part))))
            targets = list(found)
        return targets

    def _module_member_g(self, module: str, name: str):
        entry = self.modules.get(module)
        if entry is None:
            return [OPAQUE]
        hits: dict = {}
        for binding in bindings(entry[NAMES].get(name)):
            hits.update(dict.fromkeys((yield from self._follow_g(module, name, _split(binding)))))
        if hits:
            return list(hits)
        for star in entry.get(STAR, []):
            source = self.modules.get(star)
            if source is None:
                if not star.startswith("megatron"):
                    return [OPAQUE]  # from outside_package import *: could bind anything
                continue
            exported = source.get(ALL)
            if (exported is None and not name.startswith("_")) or (exported and name in exported):
                found = yield ("mm", star, name)
                if found:
                    return found
        if f"{module}.{name}" in self.modules:
            return [Target("module", f"{module}.{name}")]
        if entry.get(HAS_GETATTR) or name in _MODULE_DUNDERS:
            return [OPAQUE]
        return []

    def _follow_g(self, module: str, name: str, binding: tuple):
        kind = binding[0]
        if kind == "c":
            return [Target("class", binding[1])]
        if kind == "f":
            return [Target("function", f"{module}.{name}", binding[1], binding[2])]
        if kind == "m":
            target = binding[1]
            if not target.startswith("megatron"):
                return [OPAQUE]
            return [Target("module", target)] if target in self.modules else [OPAQUE]
        if kind == "i":
            source, imported = binding[1], binding[2]
            if not source.startswith("megatron") or source not in self.modules:
                return [OPAQUE]
            if f"{source}.{imported}" in self.modules:  # ``from package import submodule``
                return [Target("module", f"{source}.{imported}")]
            return (yield ("mm", source, imported)) or [OPAQUE]  # a broken re-export is not the user's
        if kind == "a":
            head, *rest = binding[1].split(".")
            current = (yield ("mm", module, head)) if head in self.modules[module][NAMES] else [OPAQUE]
            for part in rest:
                current = yield from self._chain_g(current, [part])
                if not current or OPAQUE in current:
                    return [OPAQUE]
            return current or [OPAQUE]
        return [OPAQUE]

    # ---- classes -------------------------------------------------------------------------------------------
    def _bases_g(self, qual: str):
        entry = self.classes.get(qual)
        out = []
        for base in entry[BASES] if entry else []:
            if base == "?":
                out.append(OPAQUE)
                continue
            short = base.split(".")[-1]
            if base in _CLOSED_BASES or (short in _ENUM_BASES and base.split(".")[0] in ("enum", short)):
                out.append(Target("builtin", short if short in _CLOSED_BASES else base))
                continue
            head, *rest = base.split(".")
            module = entry[MODULE]
            if head in self.modules[module][NAMES]:
                targets = yield ("mm", module, head)
                targets = yield from self._chain_g(targets, rest)
                classes = [t for t in targets if t.kind == "class"]
                out.append(classes[0] if classes else OPAQUE)
            elif not rest and isinstance(getattr(builtins, head, None), type):
                out.append(Target("builtin", head))
            else:
                out.append(OPAQUE)
        return out

    def _class_member_g(self, qual: str, name: str):
        if name.startswith("__") and name.endswith("__"):
            return [OPAQUE]  # dunders: every class has __module__, __qualname__, __dict__, ...
        entry = self.classes.get(qual)
        if entry is None:
            return [OPAQUE]
        found = bindings(entry[ATTRS].get(name))
        if found:
            out: dict = {}
            for b in map(_split, found):
                out[Target("function", f"{qual}.{name}", b[1], b[2]) if b[0] == "f"
                    else Target("class", b[1]) if b[0] == "c" else OPAQUE] = None
            return list(out)
        for base in (yield ("bases", qual)):
            if base.kind == "class":
                hits = yield ("cm", base.name, name)
                if hits:
                    return hits
            elif base.kind == "builtin":
                cls = _CLOSED_BASES.get(base.name) or getattr(builtins, base.name, object)
                if any(name in vars(k) for k in cls.__mro__) or name in vars(type(cls)):
                    return [OPAQUE]
            else:
                return [OPAQUE]  # an outside base (torch.nn.Module, ...): its attributes are not known here
        if entry.get(HAS_GETATTR):
            return [OPAQUE]
        return [] if name != "__init__" else [OPAQUE]

    def _is_enum_g(self, qual: str):
        for base in (yield ("bases", qual)):
            if base.kind == "builtin" and base.name in _ENUM_BASES:
                return True
            if base.kind == "class" and (yield ("enum", base.name)):
                return True
        return False

    def deprecation(self, target: Target, name: str) -> str | None:
        if target.kind == "module":
            entry = self.modules.get(target.name, {})
            return entry.get(DEPRECATED, {}).get(name)
        if target.kind == "class":
            entry = self.classes.get(target.name, {})
            return entry.get(DEPRECATED, {}).get(name)
        return None

    def module_deprecation(self, module: str) -> str | None:
        return self.modules.get(module, {}).get("mdep")

    # ---- call signatures -----------------------------------------------------------------------------------
    def call_signature(self, target: Target) -> dict | None:
        """What calling ``target`` accepts (``{"p": ..., "va": ..., "kw": ...}``), or None when unknown."""
        if target.kind == "function":
            if target.how == "p":
                return None
            sig = _sig(target.sig)
            return _drop_first(sig) if target.how == "c" else sig
        if target.kind == "class":
            return self.class_signature(target.name)
        return None

    def mro(self, qual: str) -> list:
        """Depth-first, left-to-right, deduplicated: close to C3 for the shallow hierarchies met here."""
        order: dict = {}
        stack = [Target("class", qual)]  # the next to visit is last
        while stack:
            t = stack.pop()
            if t in order:
                continue
            order[t] = None
            if t.kind == "class":
                stack.extend(reversed(self.bases(t.name)))
        return list(order)

    def class_signature(self, qual: str) -> dict | None:
        key = ("sig", qual)
        if key not in self._memo:
            self._memo[key] = self._class_signature(qual)
        return self._memo[key]

    def _class_signature(self, qual: str) -> dict | None:
        if self.is_enum(qual):
            return None
        mro = self.mro(qual)
        for t in mro:
            if t.kind == "builtin":
                return {PARAMS: [], VARARGS: 0, VARKW: 0} if t.name in ("object", "ABC", "abc.ABC") else None
            if t.kind != "class":
                return None  # an outside base decides (torch.nn.Module subclasses define their own __init__)
            entry = self.classes[t.name] if t.name in self.classes else None
            if entry is None:
                return None
            if "__new__" in entry[ATTRS]:
                return None
            inits = [_split(b) for b in bindings(entry[ATTRS].get("__init__")) if b.startswith("f ")]
            if inits:
                return _union([_drop_first(_sig(b[1])) for b in inits])
            if entry.get(DATACLASS, {}).get(DC_INIT):
                return self.dataclass_signature(mro)
        return None

    def dataclass_signature(self, mro: list) -> dict | None:
        fields: dict[str, list] = {}
        for t in reversed(mro):
            if t.kind == "builtin":
                continue
            if t.kind != "class":
                return {PARAMS: [], VARARGS: 0, VARKW: 1}  # fields of an outside base are unknown: accept any keyword
            dc = self.classes.get(t.name, {}).get(DATACLASS)
            for name, has_default, in_init, kw_only in parse_fields((dc or {}).get(DC_FIELDS, "")):
                fields.pop(name, None)
                if in_init:
                    fields[name] = [name, 2 if kw_only else 1, has_default]
        return {PARAMS: list(fields.values()), VARARGS: 0, VARKW: 0}

    def names_in(self, target: Target) -> list[str]:
        """The names visible in a module or class (for close-match suggestions)."""
        if target is None:
            return []
        if target.kind == "module":
            if self._children is None:
                self._children = {}
                for m in self.modules:
                    parent, _, child = m.rpartition(".")
                    if parent:
                        self._children.setdefault(parent, []).append(child)
            entry = self.modules.get(target.name, {})
            return sorted(set(entry.get(NAMES, {})) | set(self._children.get(target.name, ())))
        if target.kind == "class":
            names = set()
            for t in self.mro(target.name):
                if t.kind == "class" and t.name in self.classes:
                    names |= set(self.classes[t.name][ATTRS])
            return sorted(names)
        return []


@functools.lru_cache(maxsize=4096)
def _split(binding: str) -> tuple:
    """``"f m 01|self:1:0"`` -> ("f", "m", "01|self:1:0"); ``"i megatron.core x"`` -> ("i", "megatron.core", "x")."""
    kind, _, rest = binding.partition(" ")
    if kind == "f":
        how, _, sig = rest.partition(" ")
        return kind, sig, how
    return (kind,) + tuple(rest.split(" ")) if rest else (kind,)


@functools.lru_cache(maxsize=4096)
def _sig(text: str) -> dict:
    """Parsed once per text (the result is shared: read it, never change it)."""
    return parse_signature(text)


def _drop_first(sig: dict) -> dict:
    params = sig[PARAMS]
    if params and params[0][1] in (0, 1):
        params = params[1:]
    return {**sig, PARAMS: params}


def _union(sigs: list) -> dict:
    """Several definitions of one callable: accept what any accepts, require what all require."""
    if len(sigs) == 1:
        return sigs[0]
    names: dict[str, list] = {}
    for sig in sigs:
        for name, kind, default in sig[PARAMS]:
            if name in names:
                names[name][2] = names[name][2] or default
            else:
                names[name] = [name, kind, default]
    in_each = [{p[0] for p in sig[PARAMS]} for sig in sigs]
    for name, entry in names.items():
        if not all(name in present for present in in_each):
            entry[2] = 1
    return {PARAMS: list(names.values()), VARARGS: int(any(s[VARARGS] for s in sigs)),
            VARKW: int(any(s[VARKW] for s in sigs))}
