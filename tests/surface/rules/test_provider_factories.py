"""Model providers that reach get_model/pretrain other than as a name bound to a def of the calling file
: the return value of a project factory (an inner def, a lambda, a partial), a project wrapper's
closure that forwards to its argument, and ``self.method`` of a project class. Minimal projects of our own against
a tiny synthetic candidate whose get_model always passes ``config=``."""
from __future__ import annotations

import textwrap

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.project import scan_source
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import make_project, provider_candidate

FACTORIES = """
    import functools
    def build(cfg, pre_process=True, post_process=True):
        return None
    def get_provider(args, role="actor"):
        if args.custom:
            def custom_provider(pre_process=True, post_process=True):
                return None
            return custom_provider
        if role == "critic":
            return lambda pre_process=True, post_process=True, **kwargs: None
        return functools.partial(build, args)
    def wrap_with_freeze(original, args):
        def frozen_provider(pre_process=True, post_process=True):
            return original(pre_process=pre_process, post_process=post_process)
        return frozen_provider
    def forward_all(original):
        def forwarding(*args, **kwargs):
            return original(*args, **kwargs)
        return forwarding
    def not_a_factory(bridge):
        if bridge:
            return bridge.provide
        def fallback(pre_process=True):
            return None
        return fallback
    """


@pytest.fixture
def candidate(tmp_path, monkeypatch):
    """PROVIDER_TRAINING's release 0.4.0 (builders.py)."""
    return provider_candidate(tmp_path, monkeypatch)


def gate(tmp_path, candidate, train: str) -> set:
    project = make_project(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/factories.py": FACTORIES,
                                               "pkg/train.py": train})
    report = surface_gate(str(candidate), project)
    return {(f.path, f.line, f.name.split("setup.", 1)[1], f.guarded) for f in report.findings if f.kind == c.OVERRIDE}


def test_every_function_a_factory_returns_is_a_provider_reported_at_its_def(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        from megatron.training.setup import get_model
        from pkg.factories import get_provider
        def setup(args):
            return get_model(get_provider(args, "actor"))
        """)
    # the inner def and the partial cannot take config=; the lambda takes **kwargs
    assert got == {("pkg/factories.py", 7, "get_model(config=)->custom_provider", False),
                   ("pkg/factories.py", 12, "get_model(config=)->partial(build)", False)}


def test_a_wrapper_closure_is_the_provider_and_a_forwarding_one_hands_on_its_argument(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        from megatron.training.setup import get_model, pretrain
        from pkg.factories import forward_all, get_provider, wrap_with_freeze
        def setup(args):
            get_model(wrap_with_freeze(get_provider(args), args))
            pretrain(None, forward_all(wrap_with_freeze(None, args)))
        """)
    assert got == {("pkg/factories.py", 14, "get_model(config=)->frozen_provider", False),
                   ("pkg/factories.py", 14, "pretrain(config=)->frozen_provider", False)}


def test_a_factory_with_one_return_that_is_not_a_function_is_not_followed(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        from megatron.training.setup import get_model
        from pkg.factories import not_a_factory
        get_model(not_a_factory(None))
        """)
    assert got == set()


def test_a_bound_method_of_a_project_class_is_the_provider_without_self(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        from megatron.training.setup import get_model
        class Base:
            def model_provider_func(self, pre_process=True, post_process=True):
                return None
        class Trainer(Base):
            def open_provider(self, pre_process=True, post_process=True, config=None):
                return None
            def setup(self):
                get_model(self.model_provider_func)
                get_model(self.open_provider)
        def main(rebound):
            trainer = Trainer()
            get_model(trainer.model_provider_func)
            get_model(trainer.open_provider)
            rebound = Trainer()
            get_model(rebound.model_provider_func)
        """)
    # ``rebound`` is also a parameter: bound twice, so what it holds is not known
    assert got == {("pkg/train.py", 10, "get_model(config=)->self.model_provider_func", False),
                   ("pkg/train.py", 14, "get_model(config=)->trainer.model_provider_func", False)}


def test_a_factory_of_the_same_file_is_followed_in_a_single_file_scan():
    source = textwrap.dedent(FACTORIES) + "from megatron.training.setup import get_model\n" \
        "get_model(wrap_with_freeze(None, None))\n"
    uses, _sets = scan_source(source, "pkg/one.py")
    call = next(u for u in uses if u.how == "call" and u.name.endswith("get_model"))
    assert [(slot, name, where) for slot, name, _sig, where in call.callables] == \
        [("0", "frozen_provider", ("pkg/one.py", 14))]
