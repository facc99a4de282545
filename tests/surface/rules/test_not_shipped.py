"""What the candidate does not ship is not a removal: packages outside the wheel (``megatron.training`` before it
ships, ``megatron.bridge``) and the unbuilt compiled extensions of a source checkout."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import PAIR_0_3_0 as OLD
from ..builders import make_project, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_packages_the_wheel_does_not_ship_are_not_removals(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.training.arguments import parse_args
        from megatron.training.tokenizer import build_tokenizer
        from megatron.bridge import AutoBridge
        """})
    old = surface_gate(str(releases["0.1.0"]), project)
    assert {f.kind for f in old.findings} == {c.NOT_SHIPPED} and old.exit_code == 0
    assert any("0.2.0" in f.instead for f in old.findings if f.name.startswith("megatron.training"))
    new = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.name, f.kind) for f in new.findings} == {
        ("megatron.training.tokenizer", c.NOT_SHIPPED), ("megatron.bridge", c.NOT_SHIPPED)}


def test_a_checkouts_unbuilt_extension_modules_are_not_missing(tmp_path, wheels):
    tree = make_project(tmp_path / "checkout", {**{k: v for k, v in OLD.items() if v is not None},
                                                "megatron/core/datasets/__init__.py": "",
                                                "megatron/core/datasets/helpers.cpp": "int x;\n",
                                                "megatron/core/datasets/Makefile": "LIBNAME = helpers_cpp\n"})
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.datasets import helpers_cpp
        from megatron.core.datasets import helpers_gone
        """})
    report = surface_gate(str(tree), project)
    assert {(f.line, f.kind) for f in report.findings} == {(3, c.MISSING_NAME)}
