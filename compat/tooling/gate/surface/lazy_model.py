# SPDX-License-Identifier: Apache-2.0
"""A release's model built module by module, as lookups reach it: the same answers as ``model.build_model``, for
the part of the wheel a run looks at (most of a wheel is never looked at by a project).

The module names come from the archive's file list (nothing parsed); a module's entry is built the first time it
is read, from its own steps of ``model.module_events`` in build order. A class ``a.b.C`` can only be defined by a
module whose name is a strict prefix of its name (``a.b``, or ``a`` for a nested ``b.C``): those modules are built
when it is asked for, and what each file defined is merged in file order, as the whole build merges a class that
several branches or files define. What was built is kept in ``state()`` (cached per wheel: ``cache.py``), so a
later run reads it instead of parsing again.

A file that does not parse is listed in ``unparsed`` when its module is built (the whole build lists every
one). The candidate's parse budget (``SourceBudget``) is spent by the files this process reads.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping

from ....errors import CandidateError, CompatError
from ...pysource import SourceBudget
from .model import (
    MODEL_FORMAT,
    SOURCE_FILE,
    apply_event,
    index_module,
    member_files,
    merge_class,
    module_events,
    packages_of,
)

LAZY = "lazy"  # the state's marker: {"order": [module], "steps": {module: [[step, file, seq], ...]},
# "modules": {module: entry} (those built), "defined": {module: [[seq, {qual: class entry}], ...]},
# "spelled": {word: [module, ...]}} (see LazyModel.state)
_ABOUT = ("format", "sha256", "version", "label", "kind", "packages")
# (file, its sha256, its module's entry before it) -> (the entry after it, the classes it defines, did not parse):
# shared by every model of this process (read only: an entry is copied before a later step changes its keys)
_FILE_INDEX: dict = {}
_FILE_INDEX_SIZE = 20_000


class LazyModel(dict):
    """A model (``model.py``'s keys) whose ``modules`` and ``classes`` are built on first read. ``open_source``:
    a callable that opens the archive the first time a file must be read."""

    def __init__(self, about: dict, order: list, steps: dict, modules: dict, defined: dict, spelled: dict,
                 unparsed: list, open_source):
        super().__init__({k: about.get(k) for k in _ABOUT})
        self._order, self._steps, self._built, self._defined, self._spelled = order, steps, modules, defined, spelled
        self._names = set(order)
        self._open_source, self._source, self._root, self._budget = open_source, None, "", SourceBudget()
        self.changed = False
        self["modules"] = LazyModules(self)
        self["classes"] = LazyClasses(self)
        self["unparsed"] = unparsed

    @classmethod
    def plan(cls, source, *, sha256: str | None, version: str | None, open_source) -> LazyModel:
        """A model of ``source`` with nothing parsed yet (its file list read)."""
        root, files = member_files(source)
        steps: dict = {}
        for seq, (module, step, rel) in enumerate(module_events(files)):
            steps.setdefault(module, []).append([step, rel, seq])
        about = {"format": MODEL_FORMAT, "sha256": sha256, "version": version, "label": source.label,
                 "kind": source.kind, "packages": packages_of(steps)}
        model = cls(about, list(steps), steps, {}, {}, {}, [], open_source)
        model._source, model._root = source, root or ""
        return model

    @classmethod
    def from_state(cls, state: dict, open_source) -> LazyModel | None:
        """The model a cached ``state()`` describes, or None when it is not one."""
        try:
            parts = [state[k] for k in ("order", "steps", "modules", "defined", "spelled", "unparsed")]
            order, steps, built = parts[:3]
            ok = (state.get(LAZY) == 1 and [type(v) for v in parts] == [list, dict, dict, dict, dict, list]
                  and set(order) == set(steps) and set(built) <= set(steps))
        except (KeyError, TypeError):
            return None
        return cls(state, *parts, open_source) if ok else None

    def state(self) -> dict:
        """What was built so far, as JSON data (``from_state`` reads it back)."""
        return {**{k: self.get(k) for k in _ABOUT}, LAZY: 1, "order": self._order, "steps": self._steps,
                "modules": self._built, "defined": self._defined, "spelled": self._spelled,
                "unparsed": self["unparsed"]}

    def absorb(self, state: dict) -> None:
        """Take the modules, classes and word lists another process stored for the same wheel and this one has not
        built (a module's entry depends on the wheel and the format only), so that its save keeps theirs."""
        if state.get("order") != self._order:
            return
        for name, entry in state.get("modules", {}).items():
            if name in self._steps and name not in self._built:
                self._built[name] = entry
                if name in state.get("defined", {}):
                    self._defined[name] = state["defined"][name]
        for word, modules in state.get("spelled", {}).items():
            self._spelled.setdefault(word, modules)
        self["unparsed"].extend(rel for rel in state.get("unparsed", []) if rel not in self["unparsed"])

    # ---- building ------------------------------------------------------------------------------------------------
    def module(self, name: str) -> dict | None:
        """The entry of module ``name`` (built now if need be), or None when the release has no such module."""
        entry = self._built.get(name)
        if entry is None and name in self._steps:
            entry = self._build(name)
        return entry

    def _build(self, name: str) -> dict:
        model: dict = {"modules": {}}
        defined = []
        try:
            for step, rel, seq in self._steps[name]:
                if step == SOURCE_FILE:
                    classes = self._index_file(model, name, rel)
                    if classes:
                        defined.append([seq, classes])
                else:
                    apply_event(model, name, step, rel, self._read, self._budget)
        except CompatError:
            raise
        except Exception as exc:  # noqa: BLE001 - an untrusted archive can fail in many ways (as cache._build)
            raise CandidateError(f"cannot read {self.get('label')}: {type(exc).__name__}: {exc}") from None
        self._built[name] = model["modules"][name]
        if defined:
            self._defined[name] = defined
        self.changed = True
        return self._built[name]

    def _index_file(self, model: dict, name: str, rel: str) -> dict:
        """Index one file into ``model``'s entry of ``name``; the classes it defines. The index of a file is a
        function of its path, its bytes and the entry before it, and releases share most files (a patch release
        nearly all): one met before in this process is not parsed again."""
        data = self._read(rel)
        before = model["modules"].get(name)
        key = (rel, hashlib.sha256(data).digest(), json.dumps(before, sort_keys=True))
        known = _FILE_INDEX.get(key)
        if known is None:
            scratch = {"modules": {name: dict(before)} if before is not None else {}, "classes": {}, "unparsed": []}
            index_module(scratch, rel, data, self._budget)  # changes the entry's keys, never a value inside
            known = (scratch["modules"][name], scratch["classes"], bool(scratch["unparsed"]))
            if len(_FILE_INDEX) >= _FILE_INDEX_SIZE:
                _FILE_INDEX.clear()
            _FILE_INDEX[key] = known
        entry, classes, unparsed = known
        model["modules"][name] = dict(entry)
        if unparsed:
            self["unparsed"].append(rel)
        return classes

    def _read(self, rel: str) -> bytes:
        if self._source is None:
            self._source = self._open_source()
            self._root = member_files(self._source)[0] or ""
        return self._source.read(self._root + rel)

    def class_entry(self, qual: str) -> dict | None:
        """The class ``qual`` as the whole build would have it (its defining modules built now if need be)."""
        parts = qual.split(".")
        found = []
        for depth in range(1, len(parts)):
            module = ".".join(parts[:depth])
            if module in self._names:
                self.module(module)
                found += [(seq, classes[qual]) for seq, classes in self._defined.get(module, ()) if qual in classes]
        entry = None
        for _seq, each in sorted(found, key=lambda item: item[0]):
            entry = merge_class(entry, each) if entry is not None else each
        return entry

    def build_all(self) -> None:
        for name in self._order:
            self.module(name)

    def classes_spelling(self, word: str) -> list[str]:
        """The classes of the modules with a file whose text holds ``word``: every class whose entry a ``word`` in
        its source could put there (the other modules are not built)."""
        modules = self._spelled.get(word)
        if modules is None:
            data = word.encode("utf-8")
            modules = [m for m in self._order if any(step == SOURCE_FILE and data in self._read(rel)
                                                     for step, rel, _seq in self._steps[m])]
            self._spelled[word] = modules
            self.changed = True
        quals: dict = {}
        for module in modules:
            self.module(module)
            quals.update(dict.fromkeys(q for _seq, classes in self._defined.get(module, ()) for q in classes))
        return list(quals)

    def class_names(self) -> list[str]:
        """Every class of the release, in the whole build's order (every module built)."""
        self.build_all()
        first: dict = {}
        for defined in self._defined.values():
            for seq, classes in defined:
                for qual in classes:
                    first[qual] = min(seq, first.get(qual, seq))
        return sorted(first, key=first.__getitem__)


class LazyModules(Mapping):
    """``model["modules"]``: membership and iteration from the file list; an entry built when it is read."""

    def __init__(self, model: LazyModel):
        self._model = model

    def __contains__(self, name) -> bool:
        return name in self._model._names

    def __getitem__(self, name: str) -> dict:
        entry = self._model.module(name) if isinstance(name, str) else None
        if entry is None:
            raise KeyError(name)
        return entry

    def get(self, name, default=None):
        entry = self._model.module(name) if isinstance(name, str) else None
        return default if entry is None else entry

    def __iter__(self) -> Iterator[str]:
        return iter(self._model._order)

    def __len__(self) -> int:
        return len(self._model._order)


class LazyClasses(Mapping):
    """``model["classes"]``: a class built when it is asked for; iterating builds every module."""

    def spelling(self, word: str) -> list[tuple[str, dict]]:
        """(qualified name, entry) of the classes that ``word`` in their source could shape (``classes_spelling``)."""
        return [(q, self[q]) for q in self._model.classes_spelling(word)]

    def __init__(self, model: LazyModel):
        self._model = model
        self._memo: dict = {}

    def get(self, qual, default=None):
        if qual not in self._memo:
            self._memo[qual] = self._model.class_entry(qual) if isinstance(qual, str) else None
        entry = self._memo[qual]
        return default if entry is None else entry

    def __getitem__(self, qual: str) -> dict:
        entry = self.get(qual)
        if entry is None:
            raise KeyError(qual)
        return entry

    def __contains__(self, qual) -> bool:
        return self.get(qual) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._model.class_names())

    def __len__(self) -> int:
        return len(self._model.class_names())
