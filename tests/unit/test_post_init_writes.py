"""The pre-check replays __post_init__'s writes: a check reads what the class would have at that point.

Each case is a small dataclass of our own: its source goes through the extraction (as a release's would), and the
class itself, executed, is the oracle. The pre-check may say "refused" only where the class raises, and "accepted"
only where it does not; None (not evaluated) is always allowed, and the table says where we expect it."""
import dataclasses
import textwrap

import pytest

from compat import precheck
from compat.effective import post_init_values
from compat.registry import schema_from_snapshot
from compat.tooling.extract import extract_class, extract_configs

HEAD = """import enum
from dataclasses import dataclass


class Recipe(str, enum.Enum):
    delayed = "delayed"
    tensorwise = "tensorwise"


class Backend(enum.Enum):
    flash = 1
    auto = 2
    quick = 1  # an alias of flash


def helper(obj):
    obj.b = -1


@dataclass
class C:
"""


def _source(*parts: str) -> str:
    body = "\n".join(textwrap.dedent(p).strip() for p in parts)
    return HEAD + textwrap.indent(body + "\n", "    ")


def _real(source: str):
    namespace: dict = {"__name__": "post_init_case"}
    exec(compile(source, "<case>", "exec"), namespace)  # our own source: the oracle
    return namespace["C"]


def _verdict(source: str, kwargs: dict):
    schema = schema_from_snapshot("0.0.0", "candidate", extract_class(source, "C"), config="ddp")
    found, counts = precheck.run(schema, post_init_values(schema, kwargs))
    if found is not None:
        return "refused"
    return "accepted" if counts["not_evaluated"] == 0 else None


FIELDS = """
a: int = 0
b: int = 0
c: int = 0
"""

CASES = [
    # a write of a known value: the check reads it
    ("set-when-none", """
        def __post_init__(self):
            if self.b is None:
                self.b = 4
            assert self.b > 0
     """, [({"b": None}, "accepted"), ({"b": -1}, "refused")]),
    # a write whose condition is False does not happen; one whose condition is True does
    ("conditional-write", """
        def __post_init__(self):
            if self.a > 5:
                self.b = 1
            assert self.b != 1
     """, [({"a": 0}, "accepted"), ({"a": 6}, "refused"), ({"a": 0, "b": 1}, "refused")]),
    # a condition is read with the values of its own moment, not those after the writes in its branch
    ("condition-of-its-moment", """
        def __post_init__(self):
            if self.a == 0:
                self.a = 5
                assert self.b > 0
     """, [({"a": 0, "b": 0}, "refused"), ({"a": 0, "b": 1}, "accepted"), ({"a": 1, "b": 0}, "accepted")]),
    # a write it cannot compute: the field is unknown after it, the others are not
    ("unknown-value", """
        def __post_init__(self):
            self.b = compute(self.a)
            assert self.b > 0
            assert self.c >= 0
     """, [({"c": -1}, "refused"), ({}, None)]),
    # a helper given self may set any field, unless its condition is False
    ("helper-of-self", """
        def __post_init__(self):
            if self.a == 100:
                helper(self)
            assert self.b >= 0
     """, [({"a": 0}, "accepted"), ({"a": 100}, None), ({"a": 0, "b": -2}, "refused")]),
    # augmented assignment: b + 3
    ("augmented", """
        def __post_init__(self):
            self.b += 3
            assert self.b > 2
     """, [({"b": 0}, "accepted"), ({"b": -2}, "refused")]),
    # setattr over a literal tuple names two fields; a check on a third is still evaluated
    ("setattr-over-literals", """
        def __post_init__(self):
            for name in ("a", "b"):
                setattr(self, name, 7)
            assert self.c == 0
            assert self.a == 7
     """, [({"c": 1}, "refused"), ({}, None)]),
    # a setattr it cannot name (a str built at run time) may set anything
    # locals: written and read in program order, comprehension variables apart
    ("locals", """
        def __post_init__(self):
            n = self.a
            if self.b is not None:
                n -= self.b
            _ = [n for n in (5, 6)]
            if n < 0:
                raise ValueError(f"{n} layers left")
     """, [({"a": 1, "b": 2}, "refused"), ({"a": 3, "b": 2}, "accepted"), ({"a": -1, "b": None}, "refused")]),
    ("local-changed-by-a-call", """
        def __post_init__(self):
            n = [self.a]
            compute(n)
            assert len(n) == 1
     """, [({}, None)]),
    # Enum members: a str-mixin member equals its value; a plain one equals no str; an alias is its member
    ("enum-members", """
        r: str = "delayed"
        backend: Backend = Backend.auto
        def __post_init__(self):
            if self.r == Recipe.tensorwise:
                raise ValueError("tensorwise")
            if self.backend is Backend.quick:
                raise ValueError("flash")
            assert self.backend != "auto"
     """, [({"r": "tensorwise"}, "refused"), ({}, "accepted"), ({"backend": "flash"}, "accepted")]),
    ("setattr-unnamed", """
        def __post_init__(self):
            setattr(self, "c" * (self.a + 1), 1)
            assert self.b == 0
     """, [({"b": 1}, None)]),
]


@pytest.mark.parametrize("name, body, rows", CASES, ids=[c[0] for c in CASES])
def test_the_pre_check_agrees_with_the_class(name, body, rows):
    source = _source(FIELDS, body)
    cls = _real(source.replace("compute(", "len("))
    for kwargs, expected in rows:
        got = _verdict(source, kwargs)
        assert got == expected, (name, kwargs)
        try:
            cls(**kwargs)
            real = "accepted"
        except (AssertionError, ValueError, TypeError):
            real = "refused"
        assert got in (None, real), (name, kwargs, real)


# ---------------------------------------------------------------- setattr targets named from the release's modules
MODULES = {
    "megatron/core/model_parallel_config.py": "",
    "megatron/core/transformer/aliases.py": textwrap.dedent("""
        RENAMES = {"old_a": ("a", 1), "old_b": ("b", 2)}

        def migrate(scopes):
            out = []
            for scope in scopes:
                if scope in RENAMES:
                    attr, value = RENAMES[scope]
                    out.append((scope, attr, value))
            return out

        def leaky(scopes, sink):
            sink.append(("x", "c"))
            return scopes
    """),
}


def _config(post_init: str) -> dict:
    source = ("from dataclasses import dataclass\nfrom ..transformer.aliases import migrate, leaky, RENAMES\n\n\n@dataclass\n"
              "class DistributedDataParallelConfig:\n    a: int = 0\n    b: int = 0\n    c: int = 0\n    d: list = None\n"
              + textwrap.indent(textwrap.dedent(post_init).strip() + "\n", "    "))
    files = {**MODULES, "megatron/core/distributed/distributed_data_parallel_config.py": source}
    return extract_configs(lambda path: files[path].encode() if path in files else None)["ddp"]["post_init"]


@pytest.mark.parametrize("post_init, targets", [
    ("""
     def __post_init__(self):
         for scope, attr, value in migrate(self.d):
             setattr(self, attr, value)
     """, ["a", "b"]),  # through a function of the release, a loop and a module-level dict
    ("""
     def __post_init__(self):
         names = []
         names.append("c")
         for n in names:
             setattr(self, n, 0)
     """, ["c"]),
    ("""
     def __post_init__(self):
         names = ["a"]
         leaky(self.d, names)
         for n in names:
             setattr(self, n, 0)
     """, None),  # the list goes to a function that adds to it: it cannot tell what it holds
    ("""
     def __post_init__(self):
         names = ["a"]
         other = names
         other.append("c")
         for n in names:
             setattr(self, n, 0)
     """, None),  # an alias may change it
    ("""
     def __post_init__(self):
         setattr(self, f"{self.d}", 0)
     """, None),
])
def test_setattr_targets_are_named_only_when_every_value_is_a_constant(post_init, targets):
    write = _config(post_init)["effects"][-1]  # the setattr is the last write of each case
    assert write["targets"] == targets


def test_a_dataclass_built_like_the_cases_is_a_real_dataclass():  # the oracle above is what it claims to be
    cls = _real(_source(FIELDS, "def __post_init__(self):\n    assert self.a == 0\n"))
    assert dataclasses.is_dataclass(cls) and [f.name for f in dataclasses.fields(cls)] == ["a", "b", "c"]


def test_replaying_many_writes_is_bounded_by_the_work_budget():
    """A candidate whose __post_init__ writes thousands of times: each new version of the values is charged to the
    call's Work budget; once it is spent the values are UNKNOWN (not evaluated), never guessed."""
    from compat.registry import Check, Field, Schema, Write

    fields = tuple(Field(f"f{i}", "int", 0, "0") for i in range(500))
    writes = tuple(Write((f"f{i % 500}",), (), (), str(i + 1), None, i, "C") for i in range(3000))
    late = Check("assert", "AssertionError", (), "self.f0 == 0", None, ("f0",), None, 1, "C", at=len(writes))
    early = Check("assert", "AssertionError", (), "self.f1 == 2", None, ("f1",), None, 1, "C", at=2)
    schema = Schema("0.0.0", "candidate", fields, checks=(early, late), effects=writes, config="ddp", class_name="C")
    found, counts = precheck.run(schema, post_init_values(schema, {}))
    assert found is None and counts == {"checks": 2, "evaluated": 1, "not_evaluated": 1}
