"""Bounded parsing of Python source read from a candidate or a project: ``parse_source`` is the one way to turn
such bytes into an ``ast`` tree.

``ast.parse`` holds every node in memory at once (about 600 bytes each), so a small, highly compressible archive
member could take gigabytes. Before parsing, the source is sized: its bytes, and an upper estimate of its tokens
(names, numbers, punctuation and newlines, counted by one regular expression; an AST has at most about 1.5 nodes per
such token). A file over a cap, or a source whose files together pass a ``SourceBudget``, is refused with
``SourceTooLargeError`` (a ``CandidateError``) before ``ast.parse`` runs. Real megatron-core 0.18.0: 476 files,
7.3 MB, 1.39 M tokens, 40,040 in its largest file (222 KB).
"""
from __future__ import annotations

import ast
import re
import warnings

from .errors import CandidateError, one_line

MIB = 1 << 20
MAX_FILE_BYTES = 2 * MIB  # 9x the largest real file
MAX_FILE_TOKENS = 400_000  # 10x the largest real file; at most ~600,000 nodes, ~350 MB while parsing
MAX_TOTAL_BYTES = 64 * MIB  # all files of one candidate or project parsed through one budget
MAX_TOTAL_TOKENS = 4_000_000  # ~2.9x the whole of megatron-core 0.18.0
_TOKEN = re.compile(rb"[A-Za-z_0-9]+|[^\sA-Za-z_0-9]|\n")
# Python refuses a decimal literal over 4300 digits, but not a hex, octal or binary one, whose value then cannot
# be shown (str() and ast.unparse raise ValueError): refuse those of more bits than 4300 decimal digits hold.
_HUGE_INT_LITERAL = re.compile(rb"\b0(?:[xX][0-9a-fA-F_]{3580,}|[oO][0-7_]{4770,}|[bB][01_]{14290,})")


class SourceTooLargeError(CandidateError):
    """A source file, or a source's files together, over a parse cap."""


class SourceUnparsableError(CandidateError):
    """A source file that is not valid Python (or nested past what the parser takes)."""


class SourceBudget:
    """What the files of one candidate or project may use together (bytes and tokens parsed so far)."""

    def __init__(self, max_bytes: int = MAX_TOTAL_BYTES, max_tokens: int = MAX_TOTAL_TOKENS):
        self.max_bytes, self.max_tokens = max_bytes, max_tokens
        self.bytes = self.tokens = 0

    def spend(self, label: str, size: int, tokens: int) -> None:
        self.bytes += size
        self.tokens += tokens
        if self.bytes > self.max_bytes or self.tokens > self.max_tokens:
            raise SourceTooLargeError(
                f"the source files parsed up to {_label(label)} add up to {self.bytes} bytes / {self.tokens} tokens, "
                f"over the {self.max_bytes}-byte / {self.max_tokens}-token cap for one source")


def _label(label: str) -> str:
    return repr(one_line(label, 200))


def size_of(source: bytes | str) -> tuple[int, int]:
    """(bytes, estimated tokens) of a source; the token count stops once it passes MAX_FILE_TOKENS."""
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
    if len(data) > MAX_FILE_BYTES:
        return len(data), -1
    tokens = 0
    for tokens, _ in enumerate(_TOKEN.finditer(data), 1):
        if tokens > MAX_FILE_TOKENS:
            break
    return len(data), tokens


def parse_source(source: bytes | str, label: str, budget: SourceBudget | None = None,
                 *, max_bytes: int = MAX_FILE_BYTES, max_tokens: int = MAX_FILE_TOKENS) -> ast.Module:
    """The module tree of ``source`` (``label`` names it in errors), refused before parsing when it is over a cap.

    Raises ``SourceTooLargeError`` over a cap and ``SourceUnparsableError`` for a syntax error, a null byte, or
    nesting the parser refuses; both are ``CandidateError`` (exit 3, one line). Warnings (invalid escapes) are
    silenced."""
    size, tokens = size_of(source)
    if size > max_bytes:
        raise SourceTooLargeError(f"{_label(label)} is {size} bytes, over the {max_bytes}-byte cap on one parsed "
                                  "source file")
    if tokens > max_tokens:
        raise SourceTooLargeError(f"{_label(label)} holds over {max_tokens} tokens, over the cap on one parsed "
                                  "source file")
    if budget is not None:
        budget.spend(label, size, tokens)
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    if _HUGE_INT_LITERAL.search(data):
        raise SourceUnparsableError(f"{_label(label)} holds an integer literal past Python's int-to-str digit limit "
                                    "(4300 decimal digits)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old sources
            return ast.parse(source, filename=one_line(label, 200))
    except (SyntaxError, ValueError) as exc:
        raise SourceUnparsableError(f"cannot parse {_label(label)}: {one_line(exc, 300)}") from None
    except (RecursionError, MemoryError):
        raise SourceUnparsableError(f"cannot parse {_label(label)}: nested too deeply") from None


__all__ = ["MAX_FILE_BYTES", "MAX_FILE_TOKENS", "MAX_TOTAL_BYTES", "MAX_TOTAL_TOKENS", "SourceBudget",
           "SourceTooLargeError", "SourceUnparsableError", "parse_source", "size_of"]
