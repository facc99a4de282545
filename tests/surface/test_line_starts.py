"""line_starts.line_start_matches finds a pattern from the word it begins with: the same matches as the pattern
anchored at every line start (multiline), on the cases where the two could part; base_names and the project's
``from X import`` lines read through it."""
import re

import pytest

from compat.tooling.gate.surface.line_starts import line_start_matches
from compat.tooling.gate.surface.project import _from_modules
from compat.tooling.gate.surface.project_classes import base_names

_BASES = rb"class[ \t]+\w+[ \t]*\(([^)]*)\)"
_FROM = rb"from[ \t]+(\.*[\w.]*)[ \t]+import"

CASES = [
    b"class A(B):\n    pass\n",
    b"  \t class A(pkg.B, metaclass=M):\n",
    b"x = 1; class A(B): pass\n",  # not at a line start
    b"subclass A(B)\nclassify(C)\n",  # the word inside another, or no name and bases
    b"class A(B,\nclass C(D)):\n",  # a match spans lines: the class line inside it is not a second one
    b"s = 'class A(B' \nclass C(D):\n",  # a failed candidate before a real one on the next line
    b"class class A(B):\nclass  C  (  E ) :\n",
    b"class A(B)",  # no newline at all
    b"\nclass A(\n  B,\n  C,\n):\n",
    b"from a.b import c\n    from .d import e\nx = 1  # from f import g\n",
    b"\"\"\"taken from the\nfrom here import it\"\"\"\nfrom  ..  import  h\nfromage import x\n",
    b"from a import (b,\nfrom c import d)\n",
]


@pytest.mark.parametrize("data", CASES)
@pytest.mark.parametrize("word, pattern", [(b"class", _BASES), (b"from", _FROM)])
def test_matches_as_the_anchored_pattern(data, word, pattern):
    anchored = re.compile(rb"^[ \t]*" + pattern, re.M)
    found = [(m.end(), m.groups()) for m in line_start_matches(data, word, re.compile(pattern))]
    assert found == [(m.end(), m.groups()) for m in anchored.finditer(data)]


def test_a_line_inside_a_match_is_not_read_again():
    # the first match runs to the first ")": its bases text holds the second line whole
    assert base_names(b"class A(B,\nclass C(D)):\n    class E(F.G): pass\n") == {"B", "class C(D", "G"}


def test_from_lines_of_a_file():
    data = b"from a.b import c\n    from .d import e\nx = 1  # from f import g\nfrom .. import h\n"
    assert _from_modules(data, "pkg/sub/mod.py") == {"a.b", "pkg.sub.d", "pkg"}
