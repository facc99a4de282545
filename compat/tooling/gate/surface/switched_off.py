# SPDX-License-Identifier: Apache-2.0
"""What a feature an ImportError handler turns off takes with it, named in the guard of the import that fails.

``try: from megatron.core... import X / except ImportError: megatron_available = False`` keeps the import from
raising, so the finding is guarded; but where the import fails, everything the project runs under
``if megatron_available:`` silently vanishes. A deferred phase over the project's files (only those that spell the
flag): for each such guard, the ``if``/``while``/conditional tests that read the flag (in the file, or in a file that
imports it from there) and what their enabled branch holds (its defs and classes, else its size) are added to the
guard text, so the report says which part of the project is off on that release.
"""
from __future__ import annotations

import ast
from dataclasses import replace

from ...ast_tools import statements
from . import guards as g
from .project import per_scan, project_file_bytes, project_module

MAX_SITES = 4  # switch sites named per flag; the rest counted


def name_what_turns_off(findings: list, sources: list) -> list:
    """``findings`` with the guard of each import an ImportError handler turns into a feature switch saying what
    the switch disables (``sources``: (rel, path) of every Python file, as ``ProjectScan.sources``)."""
    wanted = {id(f) for f in findings if f.guarded and _off_switch(f)}
    if not wanted:
        return findings
    files = per_scan(sources, _Files)  # the same text for every release of a window: read and parsed once
    out = []
    for f in findings:
        if id(f) in wanted:
            key = (f.path, f._guard[1])
            if key not in files.described:
                files.described[key] = _describe(files, f.path, f._guard[1])
            if files.described[key]:
                f = replace(f, guard=f"{f.guard}; {files.described[key]}")
        out.append(f)
    return out


def _off_switch(finding) -> bool:
    guard = finding._guard
    return bool(guard) and guard[0] == g.TRY and bool(guard[3])


def _describe(files: _Files, rel: str, line: int) -> str:
    tree = files.tree(rel)
    node = next((s for s in statements(tree.body, into_defs=True) if isinstance(s, ast.Try) and s.lineno == line),
                None) if tree is not None else None
    if node is None:
        return ""
    parts, unread = [], []
    for flag in g.disabled_names(node.handlers):
        sites, reads = files.switch_sites(flag, rel)
        if sites:
            parts.append(f"with {flag} off, the project skips {_listed(sites)}")
        elif reads:
            parts.append(f"{flag} is read at {_listed(reads)} (in no test the gate follows)")
        else:
            unread.append(flag)
    if unread:
        parts.append(f"nothing in the project reads {', '.join(unread)}")
    return "; ".join(parts)


def _listed(places: list[str]) -> str:
    more = len(places) - MAX_SITES
    return ", ".join(places[:MAX_SITES]) + (f" and {more} more" if more > 0 else "")


class _Files:
    """The project's files, parsed on demand (only those that spell the flag are read)."""

    def __init__(self, sources: list):
        self.paths = dict(sources)
        self._trees: dict[str, ast.Module | None] = {}
        self._data: dict[str, bytes] = {}
        self.described: dict[tuple, str] = {}  # (path, line of the try) -> what its switch turns off

    def data(self, rel: str) -> bytes:
        if rel not in self._data:
            self._data[rel] = project_file_bytes(self.paths[rel]) if rel in self.paths else b""
        return self._data[rel]

    def tree(self, rel: str) -> ast.Module | None:
        if rel not in self._trees:
            try:
                self._trees[rel] = ast.parse(self.data(rel))
            except (SyntaxError, ValueError):
                self._trees[rel] = None
        return self._trees[rel]

    def switch_sites(self, flag: str, home: str) -> tuple[list[str], list[str]]:
        """``rel:line `test` (what the enabled branch holds)`` for every test of ``flag``, and ``rel:line`` of every
        read of it: in ``home`` by its name, elsewhere where the file imports it from ``home``'s module (``from m
        import flag`` or ``m.flag``)."""
        sites, reads = [], []
        for rel, tree, spelled in self._readers(flag, home):
            sites += [f"{rel}:{node.lineno} `{test}` ({held})" for node, test, held in _tests_of(tree, spelled)]
            reads += [f"{rel}:{line}" for line in _read_lines(tree, spelled)]
        return sites, reads

    def _readers(self, flag: str, home: str):
        """(rel, tree, how it spells the flag) of ``home`` and of each file that imports the flag from it."""
        module = project_module(home)[0]
        for rel in sorted(self.paths, key=lambda r: (r != home, r)):  # its own file first
            if rel != home and (flag.encode() not in self.data(rel) or module.rsplit(".", 1)[-1].encode()
                                not in self.data(rel)):
                continue
            tree = self.tree(rel)
            spelled = ({flag} if rel == home else _names_for(tree, module, flag)) if tree is not None else set()
            if spelled:
                yield rel, tree, spelled


def _names_for(tree: ast.Module, module: str, flag: str) -> set[str]:
    """How a file spells ``module.flag``: the local name of ``from module import flag``, ``alias.flag`` of
    ``import module as alias``."""
    names = set()
    for s in statements(tree.body, into_defs=True):
        if isinstance(s, ast.ImportFrom) and s.level == 0 and s.module == module:
            names |= {a.asname or a.name for a in s.names if a.name == flag}
        elif isinstance(s, ast.Import):
            names |= {f"{a.asname or a.name}.{flag}" for a in s.names if a.name == module}
    return names


def _spelling(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _spelling(node.value)
        return f"{owner}.{node.attr}" if owner else None
    return None


def _reads(test, spelled: set) -> bool | None:
    """True where ``test`` can be true only with the flag on (``flag``, ``flag and x``, ``flag is not None``): its
    body needs the flag; False where it can be false only with the flag on (``not flag``, ``not flag or x``): its
    other branch needs it; None where it does not read the flag either way."""
    if _spelling(test) in spelled:
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _reads(test.operand, spelled)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        needs = isinstance(test.op, ast.And)  # and: true needs every value true; or: false needs every value false
        return needs if any(_reads(v, spelled) is needs for v in test.values) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None \
            and _spelling(test.left) in spelled:
        return isinstance(test.ops[0], ast.IsNot)
    return None


def _read_lines(tree: ast.Module, spelled: set) -> list[int]:
    """The lines where the file reads the flag at all (a call argument, a return value, a decorator...)."""
    return sorted({node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Name, ast.Attribute))
                   and isinstance(node.ctx, ast.Load) and _spelling(node) in spelled})


def _tests_of(tree: ast.Module, spelled: set) -> list[tuple]:
    """(node, test source, what runs only with the flag on) for each ``if``, ``while``, conditional expression and
    ``assert`` reading the flag, in line order."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            if _reads(node.test, spelled):
                out.append((node, ast.unparse(node.test), "the rest of its block; without it, it stops"))
            continue
        if not isinstance(node, (ast.If, ast.While, ast.IfExp)):
            continue
        on = _reads(node.test, spelled)
        if on is None:
            continue
        if isinstance(node, ast.IfExp):
            out.append((node, ast.unparse(node.test), f"takes `{ast.unparse(node.orelse if on else node.body)}`"))
            continue
        branch = node.body if on else node.orelse
        if not on and not branch and g.exits(node.body):  # ``if not flag: raise``: the rest of the block needs it
            out.append((node, ast.unparse(node.test), "the rest of its block; without it, it stops"))
        elif branch:
            out.append((node, ast.unparse(node.test), _held(branch)))
    return sorted(out, key=lambda site: (site[0].lineno, site[0].col_offset))


def _held(body: list) -> str:
    names = [f"{'class' if isinstance(s, ast.ClassDef) else 'def'} {s.name}" for s in body
             if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if names:
        return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    lines = body[-1].end_lineno - body[0].lineno + 1
    return f"{lines} line{'s' if lines != 1 else ''}"
