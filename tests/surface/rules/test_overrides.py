"""Project functions megatron calls back: overrides of a megatron base's methods against what the candidate's base
passes them, and model providers against how get_model calls them (through pretrain, functools.partial, a lambda
or a nested def; a partial's signature as inspect reports it)."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c

from ..builders import gate_on_pair as gate
from ..builders import pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_overrides_that_cannot_take_what_the_new_base_passes(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        from megatron.core.attention import SelfAttention
        class Mine(SelfAttention):
            def __init__(self, config, submodules, layer_number, model_comm_pgs=None):
                super().__init__(config, submodules, layer_number)
            def forward(self, hidden_states, attention_mask, key_value_states=None):
                return hidden_states
            def hook(self, x, y):
                return x
            def helper(self, z):
                return z
        class Open(SelfAttention):
            def forward(self, hidden_states, attention_mask, **kwargs):
                return hidden_states
            def hook(self, *args):
                return args
        """})
    got = {(f.line, f.name.rsplit(".", 1)[1], f.guarded) for f in report.findings if f.kind == c.OVERRIDE}
    assert got == {(4, "__init__(pg_collection=)", False), (4, "__init__(name=)", False),
                   (6, "forward(attention_bias=)", False), (8, "hook(y=)", False)}
    assert report.exit_code == 1


def test_an_override_on_the_release_it_was_written_for_is_fine(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        from megatron.core.attention import SelfAttention
        class Mine(SelfAttention):
            def forward(self, hidden_states, attention_mask, key_value_states=None):
                return hidden_states
        """}, version="0.3.0")
    assert [f for f in report.findings if f.kind == c.OVERRIDE] == []


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0"])
def test_overrides_against_how_the_candidates_base_calls_them(tmp_path, wheels, version):
    report = gate(tmp_path, wheels, {"b.py": """
        from megatron.core.backend import Backend
        class Mine(Backend):
            def compute(self, x, scale):
                return x
        class Open(Backend):
            def compute(self, x, scale=1, **kwargs):
                return x
        class Loose(Backend):
            def compute(self, x, *args):
                return x
        class Replaces(Backend):
            def run(self, x):
                return self.compute(x, 2)
            def compute(self, x, scale):
                return x
        class Extends(Backend):
            def run(self, x):
                return super().run(x)
            def compute(self, x, scale):
                return x
        """}, version=version)
    got = {(f.line, f.name.rsplit(".", 1)[1], f.guarded) for f in report.findings if f.kind == c.OVERRIDE}
    # 0.3.0 calls self.compute(x, 1); 0.4.0 calls self.compute(x, mask=None): the base's signature is the same.
    # Replaces defines run itself: the base's call never reaches its compute; Extends runs the base's run
    assert got == (set() if version == "0.3.0" else
                   {(4, "compute(mask=)", False), (4, "compute(scale=)", False), (10, "compute(mask=)", True),
                    (20, "compute(mask=)", False), (20, "compute(scale=)", False)})


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0"])
def test_a_model_provider_against_how_get_model_calls_it_through_pretrain(tmp_path, wheels, version):
    report = gate(tmp_path, wheels, {"p.py": """
        from megatron.training.training import pretrain
        from megatron.training.setup import get_model
        def model_provider(pre_process=True, post_process=True):
            return None
        def open_provider(pre_process=True, post_process=True, **kwargs):
            return None
        def forward_step(data_iterator, model):
            return None
        pretrain(None, model_provider, None, forward_step)
        get_model(open_provider, None)
        get_model(model_type=None, model_provider_func=model_provider)
        """}, version=version)
    got = {(f.line, f.name.rsplit(".", 1)[1]) for f in report.findings if f.kind == c.OVERRIDE}
    assert got == (set() if version == "0.3.0" else
                   {(10, "pretrain(vp_stage=)->model_provider"), (12, "get_model(vp_stage=)->model_provider")})
    assert report.exit_code == (0 if version == "0.3.0" else 1)


def test_a_provider_through_partial_lambda_or_a_nested_def_is_checked_like_a_plain_one(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"p.py": """
        import functools
        from functools import partial
        from megatron.training.setup import get_model
        def provider(cfg, pre_process=True, post_process=True):
            return None
        def open_provider(cfg, pre_process=True, post_process=True, vp_stage=None):
            return None
        get_model(partial(provider, None), None)
        get_model(functools.partial(open_provider, cfg=None), None)
        get_model(lambda pre_process, post_process: provider(None, pre_process, post_process), None)
        bound = partial(provider, cfg=None)
        get_model(bound, None)
        def build(cfg):
            def nested(pre_process=True, post_process=True):
                return None
            get_model(nested, None)
            nested_partial = partial(open_provider, cfg)
            get_model(nested_partial, None)
            outer_partial = partial(provider, cfg)
            return get_model(outer_partial, None)
        """})
    got = {(f.line, f.name.rsplit(".", 1)[1]) for f in report.findings if f.kind == c.OVERRIDE}
    # open_provider takes vp_stage=; get_model calls the provider with pre_process=, post_process=, vp_stage=
    assert got == {(9, "get_model(vp_stage=)->partial(provider)"), (11, "get_model(vp_stage=)-><lambda>"),
                   (13, "get_model(vp_stage=)->bound"), (17, "get_model(vp_stage=)->nested"),
                   (21, "get_model(vp_stage=)->outer_partial")}


def test_partial_signature_is_what_inspect_reports():
    import inspect

    from compat.tooling.gate.surface import project as p
    from compat.tooling.gate.surface.model import signature

    def f(a, b, /, c, d=1, *, e, g=2):
        return a

    source = "def f(a, b, /, c, d=1, *, e, g=2):\n    pass\n"
    import ast as _ast
    sig = signature(_ast.parse(source).body[0].args)
    for bound, keywords in [(1, set()), (2, {"c"}), (0, {"e"}), (3, {"e", "g"}), (2, {"d"})]:
        want = inspect.signature(functools_partial(f, bound, keywords))
        expected = [(q.name, q.kind, q.default is not q.empty) for q in want.parameters.values()]
        got = p.parse_signature(p.partial_signature(sig, bound, keywords))["p"]
        kinds = {0: inspect.Parameter.POSITIONAL_ONLY, 1: inspect.Parameter.POSITIONAL_OR_KEYWORD,
                 2: inspect.Parameter.KEYWORD_ONLY}
        assert [(n, kinds[k], bool(d)) for n, k, d in got] == expected, (bound, keywords)
    assert p.partial_signature(sig, 5, set()) is None and p.partial_signature(sig, 0, {"a"}) is None


def functools_partial(f, bound: int, keywords: set):
    import functools
    return functools.partial(f, *range(bound), **dict.fromkeys(keywords, 0))
