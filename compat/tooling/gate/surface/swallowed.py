# SPDX-License-Identifier: Apache-2.0
"""Project modules that cannot be imported on the candidate and that the project imports only under an
ImportError guard: their code never runs there, so what breaks in them is guarded, and the guard says where the
module's import fails and where the project swallows that (mbridge imports ``.qwen3_5`` under
``with suppress(ImportError):``; on 0.15.3 ``qwen3_5/base_bridge.py`` imports a name 0.15.3 lacks, so Qwen3.5
support silently vanishes, and nothing else in that package can run).

A module fails to import when a finding that breaks sits at its top level (outside function bodies: class bodies
run at import), when it imports a failing project module at its top level without an ImportError guard, or when a
package above it fails (importing ``a.b.c`` runs ``a/b/__init__.py`` first). A failing module is swallowed when
it is imported at all, and every import statement of the project that would import it (or a module below it) is
under ``try/except ImportError`` or ``suppress(ImportError)``, or sits in a module that fails too. A module nothing
imports (a script, a test) is not swallowed: it is run directly.
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from .kinds import GuardKind
from .line_starts import line_start_matches
from .project import per_scan, project_file_bytes, project_module

SWALLOWED = GuardKind.SWALLOWED


def mark_swallowed(findings: list, sources: list) -> list:
    """``findings`` with those that break in a swallowed module guarded (``sources``: (rel, path) of every Python
    file of the project, as ``ProjectScan.sources``)."""
    roots: dict = {}  # module -> (rel, line) of the first top-level break in it
    for f in sorted((f for f in findings if f.breaks), key=lambda f: (f.path, f.line)):
        module = project_module(f.path)[0]
        if module not in roots and getattr(f._use, "top", False):
            roots[module] = (f.path, f.line)
    if not roots:
        return findings
    files = per_scan(sources, _Files)
    guarded = {t for statement in files.guarded_imports() for t in statement[2]}
    if not guarded:  # nothing is imported under an ImportError guard: nothing can be swallowed
        return findings
    failing = _failing(guarded, roots, files)
    if not set(failing) & guarded:  # every guarded import works here
        return findings
    names = set(failing)
    statements = {(rel, line): (rel, importer, targets & names, under_guard, line) for module in failing
                  for rel, importer, targets, _top, under_guard, line in files.importers(module)}
    swallowed = _swallowed(failing, list(statements.values()))
    if not swallowed:
        return findings
    out = []
    for f in findings:
        module = project_module(f.path)[0]
        if f.breaks and module in swallowed:
            root, (where, line) = failing[module], swallowed[module]
            f = replace(f, guarded=True, guard=f"{SWALLOWED}: its import fails at {root[0]}:{root[1]}, and the "
                                                f"project imports it only under an ImportError guard ({where}:{line})")
        out.append(f)
    return out


_CATCHES_IMPORT = (b"ImportError", b"ModuleNotFoundError", b"Exception", b"except:")
_FROM_TEXT = re.compile(rb"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)")
_PLAIN_TEXT = re.compile(rb"import[ \t]+([^\n]*)")
_WORD = re.compile(rb"[A-Za-z_][\w.]*")
_COMMENT = re.compile(rb"#[^\n]*")  # to the line's end (a parenthesised import spans lines, each may end in one)


class _Files:
    """The project's import statements, found in each file's text, not parsed: one at column 0 runs at import,
    unguarded; for an indented one the lines above it say whether a ``def``, a ``try`` or a ``with`` holds it."""

    def __init__(self, sources: list):
        self.paths = dict(sources)
        self.module_of = {rel: project_module(rel)[0] for rel in self.paths}
        self.modules = {module: rel for rel, module in self.module_of.items()}
        self.known = frozenset(self.modules)
        self.tops = frozenset(m.split(".", 1)[0] for m in self.modules)
        self._index: dict | None = None
        self._guarded: list | None = None
        self._bytes: dict = {}
        self._lines: dict = {}
        self._places: dict = {}  # (rel, line) -> (importing module, top level, guarded)
        self._entries: dict = {}  # rel -> its import statements (entries)

    def entries(self, rel: str, data: bytes | None = None) -> list:
        """(line, indented, the project modules it imports) of each import statement of one file (``data``: its
        bytes, when the caller has read them)."""
        if rel not in self._entries:
            data = self._data(rel) if data is None else data
            module, is_package = project_module(rel)
            found, line, at = [], 1, 0
            for m, indented in _import_statements(data):
                line += data.count(b"\n", at, m.start())
                at = m.start()
                # a module's import of itself or of a package above it imports nothing: that is already running
                targets = _text_targets(m, module, is_package, self.known, self.tops) - _prefixes(module)
                if targets:
                    found.append((line, indented, targets))
                    if indented:
                        self._bytes[rel] = data
            self._entries[rel] = found
        return self._entries[rel]

    def index(self) -> dict:
        """project module -> (rel, line, indented, the project modules the statement imports) of its imports
        (every file's statements: built only when some guarded import fails)."""
        if self._index is None:
            self._index = {}
            for rel in self.paths:
                for line, indented, targets in self.entries(rel):
                    for target in targets:
                        self._index.setdefault(target, []).append((rel, line, indented, targets))
        return self._index

    def _data(self, rel: str) -> bytes:
        """The file's bytes (kept only for files with an indented import: the index reads every file once)."""
        if rel in self._bytes:
            return self._bytes[rel]
        return project_file_bytes(self.paths[rel])

    def guarded_imports(self) -> list:
        """The import statements of project modules under an ImportError guard (``try``, ``suppress``), read off
        the indented imports of the files that spell a handler catching it (``_CATCHES_IMPORT``: the same handlers
        ``_context`` accepts)."""
        if self._guarded is None:
            self._guarded = []
            for rel in self.paths:
                data = self._data(rel)
                if any(word in data for word in _CATCHES_IMPORT):
                    self._guarded += [statement for line, deep, targets in self.entries(rel, data) if deep
                                      for statement in (self.statement(rel, line, targets),) if statement[4]]
        return self._guarded

    def statement(self, rel: str, line: int, targets: set) -> tuple:
        """(rel, importing module, targets, top level, guarded, line) of the import statement at ``line``."""
        known = self._places.get((rel, line))
        if known is None:
            if rel not in self._lines:
                self._lines[rel] = self._data(rel).decode("utf-8", "replace").splitlines()
            known = self._places[(rel, line)] = (self.module_of[rel], *_context(self._lines[rel], line - 1))
        importer, top, guarded = known
        return rel, importer, targets, top, guarded, line

    def plain_imports(self, module: str) -> list:
        """The project modules ``module``'s file imports at column 0 (at import time, unguarded)."""
        rel = self.modules.get(module)
        return [t for _line, deep, targets in (self.entries(rel) if rel else ()) if not deep for t in targets]

    def importers(self, module: str) -> list:
        """(rel, importing module, the project modules it imports, top level, guarded, line) of each import
        statement that imports ``module`` (or a module below it)."""
        return [(rel, self.module_of[rel], targets, True, False, line) if not deep
                else self.statement(rel, line, targets) for rel, line, deep, targets in self.index().get(module, ())]


def _context(lines: list, index: int) -> tuple[bool, bool]:
    """(top level, under an ImportError guard) of the statement on ``lines[index]``, read off the indentation of
    the lines above it: the headers that enclose it (``def``, ``try:`` whose handlers catch ImportError, ``with
    suppress(ImportError)``; an ``except``/``else``/``finally`` block is not its ``try``'s body)."""
    text = lines[index]
    threshold = len(text) - len(text.lstrip())
    top, guarded, not_body = True, False, set()
    for j in range(index - 1, -1, -1):
        if threshold == 0:
            break
        row = lines[j]
        stripped = row.lstrip()
        indent = len(row) - len(stripped)
        if not stripped or stripped.startswith(("#", ")", "]", "}")) or indent >= threshold:
            continue  # a blank, a comment, a deeper line, or the closing line of a header written on many lines
        threshold = indent
        word = stripped.split("(", 1)[0].split(":", 1)[0].split()[0] if stripped.split() else ""
        if word in ("def", "async", "lambda"):
            top = False
        elif word in ("except", "else", "finally"):
            not_body.add(indent)
        elif word == "try" and indent not in not_body:
            guarded = guarded or _try_catches_import(lines, j, indent)
        elif word == "with" and "suppress" in stripped and ("ImportError" in stripped or "ModuleNotFoundError" in
                                                              stripped or "Exception" in stripped):
            guarded = True
        if word not in ("except", "else", "finally"):
            not_body.discard(indent)
    return top, guarded


def _try_catches_import(lines: list, at: int, indent: int) -> bool:
    """Does the ``try:`` on ``lines[at]`` have a handler, at its indentation, that catches ImportError?"""
    for row in lines[at + 1:]:
        stripped = row.lstrip()
        if not stripped or stripped.startswith("#") or len(row) - len(stripped) > indent:
            continue
        if len(row) - len(stripped) < indent or not stripped.startswith(("except", "else", "finally")):
            return False
        if stripped.startswith("except") and (stripped.rstrip().endswith("except:") or any(
                name in stripped for name in ("ImportError", "ModuleNotFoundError", "Exception"))):
            return True
    return False


def _import_statements(data: bytes):
    """(match, indented) of each ``from X import ...`` (groups: dots, module, names) and ``import ...`` (group:
    names) statement that starts a line but for spaces and tabs, in order, none inside another's text."""
    found = sorted([*line_start_matches(data, b"from", _FROM_TEXT), *line_start_matches(data, b"import", _PLAIN_TEXT)],
                   key=lambda m: m.start())
    end = -1
    for m in found:
        if m.start() >= end:  # ``import`` inside a ``from ... import`` is that statement's
            end = m.end()
            yield m, m.start() > 0 and data[m.start() - 1] in b" \t"


def _text_targets(m, module: str, is_package: bool, known: frozenset, tops: frozenset) -> set:
    """The project modules an import statement's text names (its module, its packages, imported submodules);
    ``tops``: the first part of every project module (an absolute import of anything else names none)."""
    dots, source, names, plain = (*m.groups(), None) if m.re is _FROM_TEXT else (None, None, None, m.group(1))
    if plain is None and not dots and source.split(b".", 1)[0].decode(errors="replace") not in tops:
        return set()
    if plain is not None:
        named = [w.decode() for w in _WORD.findall(_COMMENT.sub(b"", plain)) if w != b"as"]
    else:
        base = module.split(".") if is_package else module.split(".")[:-1]
        level = len(dots)
        base = base[: len(base) - (level - 1)] if level > 1 else base
        absolute = ".".join(([*base] if level else []) + ([source.decode()] if source else []))
        words = [w.decode() for w in _WORD.findall(_COMMENT.sub(b"", names)) if w != b"as" and b"." not in w]
        named = [absolute] + [f"{absolute}.{w}" for w in words]
    out: set = set()
    for name in named:
        out |= _prefixes(name) & known
    return out


@lru_cache(maxsize=65536)
def _prefixes(name: str) -> frozenset:
    """``a.b.c`` -> {a, a.b, a.b.c}: importing a module imports its packages."""
    parts = name.split(".")
    return frozenset(".".join(parts[:i]) for i in range(1, len(parts) + 1))


def _failing(guarded: set, roots: dict, files: _Files) -> dict:
    """module -> the root (rel, line) its import fails at, for the modules imported under a guard that fail, what
    their imports at import time reach that fails, and every module below a failing package."""
    known: dict = {}

    def fails(module: str, depth: int = 0):
        if module in known:
            return known[module]
        known[module] = None  # while it is being decided (an import cycle): not failing
        root = roots.get(module)
        if root is None and depth < 64:
            root = next((r for p in _packages(module) for r in (fails(p, depth + 1),) if r), None) or next(
                (r for t in files.plain_imports(module) if t != module for r in (fails(t, depth + 1),) if r), None)
        known[module] = root
        return root

    for module in sorted(guarded):
        fails(module)
    failing = {m: r for m, r in known.items() if r}
    if failing:
        failing.update({m: failing[p] for m in files.known if m not in failing
                        for p in _packages(m) if p in failing})
    return failing


def _swallowed(failing: dict, statements: list) -> dict:
    """module -> (rel, line) of the ImportError guard it is swallowed under, for each failing module that the
    project imports only through such a guard or from modules swallowed themselves."""
    imported = {t for _rel, _importer, hit, _guarded, _line in statements for t in hit}
    exposed = {t for _rel, importer, hit, guarded, _line in statements if importer not in failing and not guarded
               for t in hit} | (set(failing) - imported)  # what nothing imports is run directly (a script, a test)
    while True:  # an exposed failing module runs its own unguarded imports
        more = {t for _rel, importer, hit, guarded, _line in statements
                if importer in exposed and not guarded for t in hit} - exposed
        if not more:
            break
        exposed |= more
    swallowed = {t: (rel, line) for rel, _importer, hit, guarded, line in statements if guarded
                 for t in hit if t not in exposed}
    while True:  # what only swallowed modules import, and the modules below a swallowed package, never run
        more = {t: swallowed[importer] for _rel, importer, hit, _guarded, _line in statements
                if importer in swallowed for t in hit if t not in exposed and t not in swallowed}
        more.update({m: swallowed[p] for m in failing if m not in exposed and m not in swallowed and m not in more
                     for p in _packages(m)[-1:] if p in swallowed})
        if not more:
            return swallowed
        swallowed.update(more)


def _packages(module: str) -> list:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]
