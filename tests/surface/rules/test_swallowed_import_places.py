"""How swallowed.py reads an import statement's place from the text above it (no parse): top level or in a def,
under an ImportError guard or not."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface.swallowed import _context, _import_statements

SOURCE = """import os
try:
    from pkg import a
except ImportError:
    from pkg import b
def f(
    x,
):
    import pkg.c
with suppress(ImportError):
    if True:
        from pkg import d
class K:
    from pkg import e
try:
    pass
except (ValueError, ImportError):
    pass
else:
    from pkg import g
try:
    from pkg import h
except ValueError:
    pass
async def run():
    try:
        from pkg import i
    except Exception:
        pass
""".splitlines()


@pytest.mark.parametrize("name, top, guarded", [
    ("a", True, True),  # the try's body, its handler catches ImportError
    ("b", True, False),  # the handler's own body is not guarded by that try
    ("pkg.c", False, False),  # a def whose signature spans lines
    ("d", True, True),  # suppress(ImportError), through an if
    ("e", True, False),  # a class body runs at import
    ("g", True, False),  # a try's else block
    ("h", True, False),  # a try that does not catch ImportError
    ("i", False, True),
])
def test_an_import_statements_place_is_read_off_the_lines_above(name, top, guarded):
    (index,) = [i for i, line in enumerate(SOURCE) if line.strip().endswith(f"import {name}")]
    assert _context(SOURCE, index) == (top, guarded)


def test_import_statements_are_found_from_their_first_word_in_order():
    text = b"from a import (b,\n    c)  # import x\nimport d as e, f\n    from .g import h\nimportant = 1\nfrom_x = 2\n"
    found = [(m.group(0).split()[0], indented) for m, indented in _import_statements(text)]
    assert found == [(b"from", False), (b"import", False), (b"from", True)]
