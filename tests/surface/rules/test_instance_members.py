"""Methods and attributes of megatron instances (``x = MegatronClass(...)``, then ``x.member``), and an instance
name rebound by a loop, a ``with`` or a walrus is not held as that class."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c

from ..builders import gate_on_pair as gate
from ..builders import pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0"])
def test_methods_and_attributes_of_megatron_instances(tmp_path, wheels, version):
    report = gate(tmp_path, wheels, {"i.py": """
        from megatron.core.attention import SelfAttention
        from megatron.core.specs import get_moe_module_spec
        def local(cfg, other):
            a = SelfAttention(cfg, None, 1)
            a.hook(1, 2)
            a.extra = 1
            b = SelfAttention(cfg, None, 1)
            b = other()
            b.hook(1, 2)
            s = get_moe_module_spec()
            s.hook(1, 2)
            return a.extra, a.config, a.gone
        def annotated(q: SelfAttention, r: SelfAttention):
            r = r or None
            r.hook(1, 2)
            return q.hook(1, 2), q.config, q.gone
        class Holder:
            def __init__(self, cfg):
                self.attn = SelfAttention(cfg, None, 1)
                self.swapped = SelfAttention(cfg, None, 1)
            def run(self):
                self.swapped = None
                self.swapped.hook(1, y=2)
                return self.attn.hook(1, y=2), self.attn.forward(None, None, attention_bias=None)
            @staticmethod
            def other(self):
                return self.attn.hook(1, 2)
        """}, version=version)
    # 0.4.0's hook takes x alone, 0.3.0's x and y; 0.3.0's forward has no attention_bias; a.gone is missing on
    # both, q.gone is not: q may hold a subclass. b is rebound, s comes from a function, r is rebound,
    # self.swapped is stored twice, a.extra is the project's own, and a static method's first parameter is not self
    got = {(f.line, f.kind, f.name.rsplit(".", 1)[1]) for f in report.findings if f.kind in c.BREAKING}
    assert got == {(13, c.MISSING_MEMBER, "gone")} | ({(25, c.UNEXPECTED_KEYWORD, "forward(attention_bias=)")}
                                                       if version == "0.3.0" else {
        (6, c.TOO_MANY_POSITIONAL, "hook(…)"), (17, c.TOO_MANY_POSITIONAL, "hook(…)"),
        (25, c.UNEXPECTED_KEYWORD, "hook(y=)")})


def test_an_instance_rebound_by_a_loop_a_with_or_a_walrus_is_not_held(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"r.py": """
        from megatron.core.attention import SelfAttention
        def rebound(cfg, items, ctx, other):
            c = SelfAttention(cfg, None, 1)
            for c in items:
                pass
            d = SelfAttention(cfg, None, 1)
            with ctx as d:
                pass
            e = SelfAttention(cfg, None, 1)
            if (e := other()):
                pass
            f = SelfAttention(cfg, None, 1)
            return c.hook(1, 2), d.hook(1, 2), e.hook(1, 2), f.hook(1, 2)
        """})
    assert {(f.line, f.name.rsplit(".", 1)[1]) for f in report.findings} == {(14, "hook(…)")}
