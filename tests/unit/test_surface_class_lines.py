"""project_classes.base_names finds class lines from the word ``class``: the same lines as the bases pattern anchored
at every line start (multiline), on the cases where the two could part."""
import re

import pytest

from compat.tooling.gate.surface.project_classes import base_names

_ANCHORED = re.compile(rb"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.M)


def _anchored_names(data: bytes) -> set[str]:
    names = set()
    for match in _ANCHORED.finditer(data):
        for part in match.group(1).split(b","):
            word = part.strip().split(b"=")[-1].strip().split(b".")[-1]
            if word:
                names.add(word.decode("ascii", "replace"))
    return names


@pytest.mark.parametrize("data", [
    b"class A(B):\n    pass\n",
    b"  \t class A(pkg.B, metaclass=M):\n",
    b"x = 1; class A(B): pass\n",  # not at a line start
    b"subclass A(B)\nclassify(C)\n",  # the word inside another, or no name and bases
    b"class A(B,\nclass C(D)):\n",  # a match spans lines: the class line inside it is not a second one
    b"s = 'class A(B' \nclass C(D):\n",  # a failed candidate before a real one on the next line
    b"class class A(B):\nclass  C  (  E ) :\n",
    b"class A(B)",  # no newline at all
    b"\nclass A(\n  B,\n  C,\n):\n",
])
def test_class_lines_as_the_anchored_pattern(data):
    assert base_names(data) == _anchored_names(data)


def test_a_line_inside_a_match_is_not_read_again():
    # the first match runs to the first ")": its bases text holds the second line whole
    assert base_names(b"class A(B,\nclass C(D)):\n    class E(F.G): pass\n") == {"B", "class C(D", "G"}
