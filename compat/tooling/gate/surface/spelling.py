# SPDX-License-Identifier: Apache-2.0
"""Which lines of a source spell given words, found with ``bytes.find`` rather than by walking its tree: the scan
skips a function, or a test, whose lines spell nothing that could make it matter.

Only an ASCII source is searched: Python normalises the identifiers it reads (NFKC), so the bytes of any other
source need not show them, and every line of it counts as spelling everything (nothing is skipped).
"""
from __future__ import annotations

import bisect
import re
from itertools import accumulate

_NEWLINE = re.compile(rb"\r\n|\r|\n")  # the line ends Python's tokenizer counts
_VERSION_FLAG_AT = re.compile(rb"(?:mcore|megatron)_?(?:ge|gt|lt|le|eq)?_?v?\d")


def _is_word_char(byte: int) -> bool:
    return byte == 0x5F or 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


def _find_all(source: bytes, literal: bytes):
    at = source.find(literal)
    while at != -1:
        yield at
        at = source.find(literal, at + 1)


def _line_starts(source: bytes) -> list[int]:
    """The offset at which each line starts (Python's line ends: ``\r\n``, ``\r``, ``\n``)."""
    if b"\r" in source:
        return [0] + [m.end() for m in _NEWLINE.finditer(source)]
    return list(accumulate((len(line) + 1 for line in source.split(b"\n")), initial=0))[:-1]


class Lines:
    """Sorted line numbers (1-based); ``None``: every line."""

    def __init__(self, lines: list | None):
        self.lines = lines

    def within(self, first: int, last: int) -> bool:
        if self.lines is None:
            return True
        index = bisect.bisect_left(self.lines, first)
        return index < len(self.lines) and self.lines[index] <= last

    def spans(self, node) -> bool:
        """Does ``node`` (a statement or expression) reach one of these lines?"""
        return self.within(node.lineno, getattr(node, "end_lineno", None) or node.lineno)


class Spelling:
    """One source, searched for words: ``lines(words=..., anywhere=..., version=...)``."""

    def __init__(self, source: bytes):
        self.source = source if source.isascii() else None
        self.starts = _line_starts(source) if self.source is not None else []
        self._lowered: bytes | None = None

    def lines(self, words=(), anywhere=(), version: bool = False) -> Lines:
        """The lines spelling one of ``words`` as a whole identifier, one of ``anywhere`` as any part of the text,
        or (``version``) a word ``ver``/``version`` or an mcore version flag the way guards._is_version_name reads
        names (a superset: any ``ver`` that starts a word part, any case)."""
        source = self.source
        if source is None:
            return Lines(None)
        found: set[int] = set()
        for word in words:
            literal, size = word.encode(), len(word)
            for at in _find_all(source, literal):
                if (at == 0 or not _is_word_char(source[at - 1])) and \
                        (at + size >= len(source) or not _is_word_char(source[at + size])):
                    found.add(at)
        for text in anywhere:
            found.update(_find_all(source, text.encode()))
        if version:
            if self._lowered is None:
                self._lowered = source.lower()
            low = self._lowered
            found.update(at for at in _find_all(low, b"ver")
                         if source[at] == 0x56 or at == 0 or not _is_word_char(source[at - 1]) or source[at - 1] == 0x5F)
            for stem in (b"mcore", b"megatron"):
                found.update(at for at in _find_all(low, stem) if _VERSION_FLAG_AT.match(low, at))
        return Lines(sorted({bisect.bisect_right(self.starts, at) for at in found}))
