"""A name bound once in a function (``trainer = Trainer()``, then ``get_model(trainer.provider)``) is read with
instances.bound_names, the one count of bindings the scan has: a subscript target does not bind the names in its
index, and an import, a def, an except handler or a walrus rebinds. A minimal project of our own against a
synthetic candidate whose get_model passes ``config=`` to the provider, which the project's provider lacks."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import make_project, synthetic_releases

TRAINING = """
    def get_model(model_provider_func):
        return [model_provider_func(pre_process=True, config=None)]
    """
TRAIN = """
    from megatron.training.setup import get_model
    class Trainer:
        def provider(self, pre_process=True):
            return None
    def indexed(table):
        trainer = Trainer()
        table[trainer] = 1
        get_model(trainer.provider)
    def caught():
        trainer = Trainer()
        try:
            pass
        except ValueError as trainer:
            pass
        get_model(trainer.provider)
    def imported():
        trainer = Trainer()
        import trainer
        get_model(trainer.provider)
    def defined():
        trainer = Trainer()
        def trainer():
            return None
        get_model(trainer.provider)
    def walrus(other):
        trainer = Trainer()
        if (trainer := other):
            pass
        get_model(trainer.provider)
    """


@pytest.fixture
def candidate(tmp_path, monkeypatch):
    files = {"megatron/__init__.py": "", "megatron/training/__init__.py": "", "megatron/training/setup.py": TRAINING}
    return synthetic_releases(tmp_path, monkeypatch, {"0.4.0": files})["0.4.0"]


def test_a_subscript_target_does_not_rebind_and_handlers_imports_defs_and_walrus_do(tmp_path, candidate):
    project = make_project(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/train.py": TRAIN})
    report = surface_gate(str(candidate), project)
    got = {(f.line, f.name.split("setup.", 1)[1]) for f in report.findings if f.kind == c.OVERRIDE}
    # only ``indexed`` holds a Trainer for sure: ``table[trainer] = 1`` stores into table, it binds no name
    assert got == {(9, "get_model(config=)->trainer.provider")}
