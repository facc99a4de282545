"""One extraction per candidate file, for test modules that gate the same release again and again: the gate still
runs whole on every call, only the facts read from a file already read (same name, same bytes) are reused."""
from __future__ import annotations

import contextlib
import hashlib
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compat.tooling.gate import candidate


def memoized(extract: Callable[[Path], dict]) -> Callable[[Path], dict]:
    """``extract`` with its result kept per (file name, SHA-256 of the bytes); a directory (a source tree), FIFO or
    failure is never kept. Each caller gets its own copy: the gate may edit the facts it is given."""
    kept: dict[tuple[str, str], bytes] = {}

    def extract_once(path) -> dict:
        path = Path(path)
        if not path.is_file():
            return extract(path)
        key = (path.name, hashlib.sha256(path.read_bytes()).hexdigest())
        if key not in kept:
            kept[key] = pickle.dumps(extract(path))
        return pickle.loads(kept[key])

    return extract_once


@contextlib.contextmanager
def extraction_memoized() -> Iterator[None]:
    """The gate's extraction memoized while the block runs (a module-scoped fixture holds it for a module)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(candidate, "extract_candidate", memoized(candidate.extract_candidate))
        yield
