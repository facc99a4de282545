"""Keywords through a dict splat: ``Callee(**d)`` where the same scope builds ``d``
with literal keys checks those keys as keywords of the call; a dict that may hold more never makes the call look
complete (no "missing required argument"), and keys set under a branch, removed, or of a rebound name do not count."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import make_project, synthetic_releases

CALLEE = """
    class DatasetConfig:
        def __init__(self, seed, {extra}sequence_length=1):
            self.seed = seed
    """


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    return synthetic_releases(tmp_path, monkeypatch, {
        version: {"megatron/core/__init__.py": "", "megatron/core/datasets.py": CALLEE.format(extra=extra)}
        for version, extra in (("0.3.0", "renormalize=False, "), ("0.4.0", ""))})


PROJECT = """
    from megatron.core.datasets import DatasetConfig
    def literal(flag):
        kwargs = {
            "sequence_length": 4,
            "renormalize": True,
        }
        return DatasetConfig(**kwargs)
    def by_call_then_item(extra):
        kwargs = dict(sequence_length=4)
        kwargs["renormalize"] = True
        kwargs.update(extra)
        return DatasetConfig(**kwargs)
    def under_a_branch(new):
        kwargs = {"sequence_length": 4}
        if new:
            kwargs["renormalize"] = True
        return DatasetConfig(seed=1, **kwargs)
    def removed():
        kwargs = {"renormalize": True, "seed": 1}
        kwargs.pop("renormalize")
        return DatasetConfig(**kwargs)
    def rebound(other):
        kwargs = {"renormalize": True}
        kwargs = other
        return DatasetConfig(**kwargs)
    def shadowed(kwargs):
        def inner():
            return DatasetConfig(**kwargs)
        kwargs = {"renormalize": True}
        return inner
    """


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0"])
def test_literal_keys_of_a_splatted_dict_are_keywords_and_the_call_never_looks_complete(tmp_path, wheels, version):
    report = surface_gate(str(wheels[version]), make_project(tmp_path / "p", {"d.py": PROJECT}))
    got = {(f.line, f.kind, f.name.rsplit(".", 1)[1]) for f in report.findings if f.kind in c.BREAKING}
    # seed is required and in no literal: never reported (the dict may hold it); renormalize= exists on 0.3.0 only,
    # and counts where it is set directly in the body (line 6, the key; line 11, the item), not under the branch
    # (line 17), not after pop, not for a rebound name, and not from an enclosing scope's later binding
    expected = set() if version == "0.3.0" else {(6, c.UNEXPECTED_KEYWORD, "DatasetConfig(renormalize=)"),
                                                 (11, c.UNEXPECTED_KEYWORD, "DatasetConfig(renormalize=)")}
    assert got == expected


def test_a_literal_dict_written_in_the_call_is_its_keywords(surface_report):
    candidate = {"megatron/core/ops.py": "def init(size, *, order='tp'):\n    pass\n"}
    source = """
        from megatron.core.ops import init
        init(**{"size": 2, "use_sharp": True})
        init(**{"order": "dp"})
        init(**{"size": 2, **extra})
        """
    found = {(f.line, f.kind, f.name) for f in surface_report({"app/run.py": source}, candidate).findings}
    assert found == {(3, "unexpected keyword", "megatron.core.ops.init(use_sharp=)"),
                     (4, "missing required argument", "megatron.core.ops.init(size=)")}
