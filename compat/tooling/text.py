# SPDX-License-Identifier: Apache-2.0
"""Escaping for text that comes from a candidate or a project (file names, METADATA, docs) before it goes into a
markdown report: no newline, control character or ANSI escape survives, and markdown syntax is neutralised."""
from __future__ import annotations

import re

from ..errors import escape_controls

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def md_text(text) -> str:
    """Untrusted text as plain markdown prose."""
    return _MARKDOWN.sub(r"\\\1", escape_controls(str(text)))


def md_code(text) -> str:
    """Untrusted text as inline code: a fence longer than any backtick run inside it."""
    body = escape_controls(str(text))
    run = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * (run + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body else ""
    return f"{fence}{pad}{body}{pad}{fence}"


_INLINE = re.compile(r"([\\`*\[\]<~])|(?<!\w)_|_(?!\w)")


_DUNDER = re.compile(r"(?<![\w`])(__[A-Za-z][A-Za-z0-9_]*?__)(?![\w`])")


def md_prose(text) -> str:
    """Our own sentences that quote untrusted text (a shim note quoting a doc): one line, and the characters that
    open inline markup anywhere in a line (code, emphasis, links and images, HTML, strikethrough) escaped. Block
    syntax (#, -, >, |) only acts at the start of a line, which the report always writes itself, so ">=3.12" and
    "0.19.2" stay readable. A dunder name (``__post_init__``) becomes a code span: escaped underscores render as
    ``\\__post_init_\\_`` in some viewers and as italics in others."""
    parts = _DUNDER.split(escape_controls(str(text)))
    return "".join(md_code(part) if i % 2 else _INLINE.sub(lambda m: "\\" + m.group(0), part)
                   for i, part in enumerate(parts))


def bullet_section(title: str, lines: list[str]) -> list[str]:
    """A report section of bullet lines (our own sentences), or nothing when there are none."""
    return ["", f"## {title}", "", *[f"- {line}" for line in lines]] if lines else []
