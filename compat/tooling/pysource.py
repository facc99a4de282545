# SPDX-License-Identifier: Apache-2.0
"""Bounded parsing of Python source read from a candidate or a project: ``parse_source`` is the one way to turn
such bytes into an ``ast`` tree.

``ast.parse`` holds every node in memory at once (about 600 bytes each), so a small, highly compressible archive
member could take gigabytes. Before parsing, the source is sized: its bytes, and an upper estimate of its tokens
(names, numbers, punctuation and newlines, counted by one regular expression; an AST holds at most about 1.5
distinct nodes per such token). A file over a cap is refused with ``SourceTooLargeError`` (a ``CandidateError``)
before ``ast.parse`` runs, which bounds memory. A ``SourceBudget`` shared by the files of one candidate or project bounds time: their
bytes together, and the nodes of their trees together (counted after each parse; a parse whose file could pass the
cap at NODES_PER_TOKEN does not start). Real code has about 0.5 nodes per estimated token, so a cap on tokens alone
that is tight enough for hostile files would refuse real releases. Real megatron-core 0.19.2: 542 files, 8.8 MB
and 0.86 M nodes in all, 43,578 tokens in its largest file (benchmarks/results/real_release_bounds.md: no release
from 0.7.0 on is refused).
"""
from __future__ import annotations

import ast
import os
import re
import warnings

from ..errors import CandidateError, one_line, shown
from .ast_tools import walk

MIB = 1 << 20
MAX_FILE_BYTES = 2 * MIB  # 9x the largest real file (222 KB)
MAX_FILE_TOKENS = 200_000  # 4.6x the largest real file; at most ~300,000 nodes, ~190 MB while parsing
MAX_TOTAL_BYTES = 64 * MIB  # all files parsed through one SourceBudget (7.3x megatron-core 0.19.2)
# 1.9x megatron-core 0.19.2 (0.86 M), 1.5x a Megatron-LM main checkout's megatron/ (1.06 M, 2026-12-01); hostile
# files up to the cap cost ~4.7 CPU-s in the surface gate (5.2 s at 1.8 M). A larger real source can raise it.
MAX_TOTAL_NODES = int(os.environ.get("MCORE_COMPAT_MAX_SOURCE_NODES") or 1_600_000)
_RAISE = " (MCORE_COMPAT_MAX_SOURCE_NODES raises it)"
NODES_PER_TOKEN = 2  # ast.walk's count per estimated token, at most ("a+a+a": BinOp, Add, Name, Load per "+a")
_TOKEN = re.compile(rb"[A-Za-z_0-9]+|[^\sA-Za-z_0-9]|\n")
# Python refuses a decimal literal over 4300 digits, but not a hex, octal or binary one, whose value then cannot
# be shown (str() and ast.unparse raise ValueError): refuse those of more bits than 4300 decimal digits hold.
_RADIX_PREFIXES = (b"0x", b"0X", b"0o", b"0O", b"0b", b"0B")  # what such a literal starts with (found by bytes.find)
_HUGE_INT_LITERAL = re.compile(rb"\b0(?:[xX][0-9a-fA-F_]{3580,}|[oO][0-7_]{4770,}|[bB][01_]{14290,})")


class SourceTooLargeError(CandidateError):
    """A source file, or a source's files together, over a parse cap."""


class SourceUnparsableError(CandidateError):
    """A source file that is not valid Python (or nested past what the parser takes)."""


class SourceBudget:
    """What the files of one candidate or project may use together: bytes and AST nodes (reserved from the token
    estimate before a parse, counted after it)."""

    def __init__(self, max_bytes: int = MAX_TOTAL_BYTES, max_nodes: int = MAX_TOTAL_NODES):
        self.max_bytes, self.max_nodes = max_bytes, max_nodes
        self.bytes = self.nodes = 0

    def reserve(self, label: str, size: int, tokens: int) -> None:
        """Before a parse: its bytes, and refuse when the nodes it may add (at most NODES_PER_TOKEN a token) would
        pass the cap, so that no parse starts that the budget cannot pay for."""
        self.bytes += size
        if self.bytes > self.max_bytes:
            raise SourceTooLargeError(f"the source files parsed up to {_label(label)} add up to {self.bytes} bytes, "
                                      f"over the {self.max_bytes}-byte cap for one source")
        if self.nodes + NODES_PER_TOKEN * tokens > self.max_nodes:
            raise SourceTooLargeError(f"the source files parsed up to {_label(label)} may add up to "
                                      f"{self.nodes + NODES_PER_TOKEN * tokens} syntax tree nodes, over the "
                                      f"{self.max_nodes}-node cap for one source{_RAISE}")

    def spend_nodes(self, label: str, tree: ast.AST) -> None:
        self.nodes += count_nodes(tree)
        if self.nodes > self.max_nodes:
            raise SourceTooLargeError(f"the source files parsed up to {_label(label)} add up to {self.nodes} syntax "
                                      f"tree nodes, over the {self.max_nodes}-node cap for one source{_RAISE}")


def count_nodes(tree: ast.AST) -> int:
    """The nodes ``ast.walk(tree)`` yields (``ast_tools.walk``: this runs on every parsed file)."""
    return len(walk(tree, ctx=True))


def _label(label: str) -> str:
    return shown(label)


def size_of(data: bytes, max_tokens: int = MAX_FILE_TOKENS) -> int:
    """The estimated tokens of ``data``; counting stops once it passes ``max_tokens``."""
    return _TOKEN.subn(b"", data, count=max_tokens + 1)[1]


def parse_source(source: bytes | str, label: str, budget: SourceBudget | None = None,
                 *, max_bytes: int = MAX_FILE_BYTES, max_tokens: int = MAX_FILE_TOKENS) -> ast.Module:
    """The module tree of ``source`` (``label`` names it in errors), refused before parsing when it is over a cap.

    Raises ``SourceTooLargeError`` over a cap and ``SourceUnparsableError`` for a syntax error, a null byte, or
    nesting the parser refuses; both are ``CandidateError`` (exit 3, one line). Warnings (invalid escapes) are
    silenced."""
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
    if len(data) > max_bytes:
        raise SourceTooLargeError(f"{_label(label)} is {len(data)} bytes, over the {max_bytes}-byte cap on one "
                                  "parsed source file")
    # every token is at least one byte: without a budget to charge, a file of at most max_tokens bytes needs no count
    tokens = size_of(data, max_tokens) if budget is not None or len(data) > max_tokens else len(data)
    if tokens > max_tokens:
        raise SourceTooLargeError(f"{_label(label)} holds over {max_tokens} tokens, over the cap on one parsed "
                                  "source file")
    if budget is not None:
        budget.reserve(label, len(data), tokens)
    if any(prefix in data for prefix in _RADIX_PREFIXES) and _HUGE_INT_LITERAL.search(data):
        raise SourceUnparsableError(f"{_label(label)} holds an integer literal past Python's int-to-str digit limit "
                                    "(4300 decimal digits)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old sources
            tree = ast.parse(source, filename=one_line(label, 200))
    except (SyntaxError, ValueError) as exc:
        raise SourceUnparsableError(f"cannot parse {_label(label)}: {one_line(exc, 300)}") from None
    except (RecursionError, MemoryError):
        raise SourceUnparsableError(f"cannot parse {_label(label)}: nested too deeply") from None
    if budget is not None:
        budget.spend_nodes(label, tree)
    return tree


__all__ = ["MAX_FILE_BYTES", "MAX_FILE_TOKENS", "MAX_TOTAL_BYTES", "MAX_TOTAL_NODES", "SourceBudget",
           "SourceTooLargeError", "SourceUnparsableError", "parse_source", "size_of"]
