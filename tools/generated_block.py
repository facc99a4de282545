"""A block of a document generated from the code, between two marker lines: rewrite it, or check that it is
current (tools.layout's module list, tools.rule_catalogue's rule catalogue)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def replaced(document: str, begin: str, end: str, body: str) -> str:
    """``document`` with what lies between the ``begin`` and ``end`` markers replaced by ``body``."""
    start, stop = document.index(begin) + len(begin), document.index(end)
    return document[:start] + "\n" + body + "\n" + document[stop:]


def run(argv: list[str], target: Path, begin: str, end: str, render: Callable[[], str],
        problems: Callable[[], list[str]], command: str) -> int:
    """``command [--check]``: exit 1 with the problems, or (``--check``) when the block is stale; else rewrite it."""
    bad = problems()
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    text = target.read_text(encoding="utf-8")
    fresh = replaced(text, begin, end, render())
    if "--check" in argv:
        if fresh != text:
            print(f"{target.name}'s generated block is stale: run {command}", file=sys.stderr)
            return 1
        return 0
    target.write_text(fresh, encoding="utf-8")
    return 0
