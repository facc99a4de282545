# SPDX-License-Identifier: Apache-2.0
"""Matches of a pattern that begins with a word, where only spaces and tabs precede the word on its line: the
matches of the pattern anchored with ``^[ \\t]*`` (multiline), none overlapping another, found from the word instead
(an anchored search tries every position of the bytes; a search for the word skips to its occurrences)."""
from __future__ import annotations

import re
from collections.abc import Iterator


def line_start_matches(data: bytes, word: bytes, pattern: re.Pattern) -> Iterator[re.Match]:
    """``pattern`` (which begins with ``word``) matched at each occurrence of ``word`` that starts a line but for
    spaces and tabs, searching on after each match's end, as ``finditer`` of the anchored pattern does."""
    position = 0
    while (at := data.find(word, position)) >= 0:
        line = data.rfind(b"\n", 0, at) + 1
        match = None if data[line:at].strip(b" \t") else pattern.match(data, at)
        if match is None:
            position = at + 1
            continue
        yield match
        position = match.end()
