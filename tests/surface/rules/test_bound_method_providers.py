"""Factories returning a bound method: ``return obj.method`` where ``obj = ProjectClass(...)`` is obj's
one binding in the factory gives that class's method (``self`` dropped) as a model provider, like a returned
def. An object of unknown class, one bound twice, or a method the project class does not define (a megatron
base's) gives nothing. Minimal projects of our own against the synthetic candidate
test_provider_factories.py uses too (builders.provider_candidate: its get_model passes ``config=``)."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import make_project, provider_candidate


@pytest.fixture
def candidate(tmp_path, monkeypatch):
    """PROVIDER_TRAINING's release 0.4.0 (builders.py)."""
    return provider_candidate(tmp_path, monkeypatch)

PROVIDERS = """
    from megatron.training.setup import SomeBase
    class Provider:
        def provide(self, pre_process=True, post_process=True):
            return None
        def provide_all(self, pre_process=True, post_process=True, **kwargs):
            return None
    class Derived(Provider):
        pass
    class FromMegatron(SomeBase):
        pass
    """
FACTORIES = """
    from pkg.providers import Derived, FromMegatron, Provider
    def bound(args):
        provider = Provider()
        if args.all:
            return provider.provide_all
        return provider.provide
    def derived(args):
        made = Derived()
        return made.provide
    def rebound(args, other):
        provider = Provider()
        if args:
            provider = other
        return provider.provide
    def megatron_method(args):
        made = FromMegatron()
        return made.forward
    def unknown(bridge):
        provider = bridge.to_provider()
        return provider.provide
    """
TRAIN = """
    from megatron.training.setup import get_model
    from pkg.factories import bound, derived, megatron_method, rebound, unknown
    def setup(args, bridge):
        get_model(bound(args))
        get_model(derived(args))
        get_model(rebound(args, None))
        get_model(megatron_method(args))
        return get_model(unknown(bridge))
    """


def test_a_bound_method_a_factory_returns_is_a_provider(tmp_path, candidate):
    project = make_project(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/providers.py": PROVIDERS,
                                               "pkg/factories.py": FACTORIES, "pkg/train.py": TRAIN})
    report = surface_gate(str(candidate), project)
    got = {(f.path, f.line, f.name.split("setup.", 1)[1], f.guarded) for f in report.findings if f.kind == c.OVERRIDE}
    # provide cannot take config= (found through Provider and through Derived, its project base's method);
    # provide_all takes **kwargs; a rebound name, a megatron base's method and an object of unknown class: nothing
    assert got == {("pkg/factories.py", 7, "get_model(config=)->provider.provide", False),
                   ("pkg/factories.py", 10, "get_model(config=)->made.provide", False)}
