"""Python files parsed once per test process: several tests walk every module of compat/ (the layout, the rule
language, vendor's self-imports), and parsing them all takes ~0.25 s of CPU each time. Keyed by the file's path,
size and modification time, so a file rewritten since is parsed again. Callers read the tree, never change it."""
from __future__ import annotations

import ast
import functools
import os
from pathlib import Path


def parsed(path: str | os.PathLike) -> ast.Module:
    st = os.stat(path)
    return _parse(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.cache
def _parse(path: str, size: int, mtime_ns: int) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"))
