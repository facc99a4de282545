"""A project function put in a megatron callable's place: by assignment
(``Attention.forward = patched_forward``), ``setattr``, or a dotted string handed to a registrar with it
(``register("megatron.core....forward", fn)``, ``mock.patch("megatron...", fake)``). Megatron then calls the
project's function as it calls the original, so a parameter the candidate's original gained and the function cannot
take is an override-signature finding, at the function's def. Minimal projects of our own against two tiny
synthetic releases: 0.5.0 adds ``rotary_pos_cos`` to ``Attention.forward`` and ``prev_pipeline_rank`` to
``_batched_p2p_ops``."""
from __future__ import annotations

import pytest

from compat.tooling import refresh
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import make_project, make_wheel

OLD = {"megatron/core/layers.py": """
    class LinearFn:
        @staticmethod
        def forward(ctx, inputs, weight):
            return inputs
    """, "megatron/core/attention.py": """
    class Attention:
        def forward(self, hidden_states, attention_mask, inference_context=None):
            return hidden_states
    """, "megatron/core/p2p.py": """
    def _batched_p2p_ops(*, tensor_send_prev, tensor_recv_prev, group):
        return []
    """}
NEW = {"megatron/core/layers.py": """
    class LinearFn:
        @staticmethod
        def forward(ctx, inputs, weight, wgrad_deferral_limit):
            return inputs
    """, "megatron/core/attention.py": """
    class Attention:
        def forward(self, hidden_states, attention_mask, inference_context=None, rotary_pos_cos=None):
            return self.core(hidden_states, rotary_pos_cos=rotary_pos_cos)
    """, "megatron/core/p2p.py": """
    def _batched_p2p_ops(*, tensor_send_prev, tensor_recv_prev, group, prev_pipeline_rank=None):
        return []
    """}
PATCHES = """
    def forward(self, hidden_states, attention_mask, inference_context=None):
        return hidden_states

    def batched_p2p_ops(*, tensor_send_prev, tensor_recv_prev, group):
        return []

    def forward_taking_all(self, hidden_states, *args, **kwargs):
        return hidden_states

    def forward_wrapper(fn):
        def wrapper(self, *args, **kwargs):
            return fn(self, *args, **kwargs)
        return wrapper

    def narrow_wrapper(fn):
        def wrapper(self, hidden_states, attention_mask, inference_context=None):
            return fn(self, hidden_states, attention_mask, inference_context)
        return wrapper
    """


@pytest.fixture
def candidate(tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))
    base = {"megatron/__init__.py": "", "megatron/core/__init__.py": ""}
    make_wheel(cache, "0.4.0", {**base, **OLD})
    path = make_wheel(cache, "0.5.0", {**base, **NEW})
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {"0.4.0": False, "0.5.0": False})
    return path


def gate(tmp_path, candidate, adaptor: str, against: str | None = None) -> set:
    project = make_project(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/patches.py": PATCHES,
                                               "pkg/adaptor.py": adaptor})
    report = surface_gate(str(candidate), project, against)
    return {(f.path, f.line, f.name, f.guarded) for f in report.findings if f.kind == c.OVERRIDE}


FORWARD = "megatron.core.attention.Attention.forward(rotary_pos_cos=)"
P2P = "megatron.core.p2p._batched_p2p_ops(prev_pipeline_rank=)"


def test_an_assigned_replacement_is_checked_at_its_def(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        from megatron.core.attention import Attention
        from megatron.core import p2p
        from pkg.patches import forward, batched_p2p_ops
        Attention.forward = forward
        setattr(p2p, "_batched_p2p_ops", batched_p2p_ops)
        """)
    assert got == {("pkg/patches.py", 2, FORWARD, False), ("pkg/patches.py", 5, P2P, False)}


def test_a_dotted_string_registration_is_a_replacement(tmp_path, candidate):
    # MindSpeed's patch manager: the function imported inside the adaptor's method, the target a dotted string
    got = gate(tmp_path, candidate, """
        class Adaptation:
            def register(self, target, function):
                pass
            def execute(self):
                from pkg.patches import forward, batched_p2p_ops
                self.register("megatron.core.attention.Attention.forward", forward)
                self.register("megatron.core.p2p._batched_p2p_ops", batched_p2p_ops)
        """)
    assert got == {("pkg/patches.py", 2, FORWARD, False), ("pkg/patches.py", 5, P2P, False)}


def test_a_replacement_that_takes_everything_or_forwards_everything_is_fine(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        from megatron.core.attention import Attention
        from pkg.patches import forward_taking_all, forward_wrapper
        def apply(register):
            Attention.forward = forward_taking_all
            register("megatron.core.attention.Attention.forward", forward_wrapper)
        """)
    assert got == set()


def test_a_decorator_is_checked_by_the_function_it_returns(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        def apply(register):
            from pkg.patches import narrow_wrapper
            register("megatron.core.attention.Attention.forward", narrow_wrapper)
        """)
    assert got == {("pkg/patches.py", 17, FORWARD, False)}  # the inner def


def test_a_replacement_installed_under_a_version_check_not_taken_is_guarded(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        from megatron.core.attention import Attention
        from pkg.patches import forward
        if hasattr(Attention, "forward_legacy"):
            Attention.forward = forward
        """)
    assert got == {("pkg/patches.py", 2, FORWARD, True)}


def test_with_against_the_new_release_the_misfit_is_not_new(tmp_path, candidate):
    got = gate(tmp_path, candidate, """
        from megatron.core.attention import Attention
        from pkg.patches import forward
        Attention.forward = forward
        """, against="0.5.0")
    assert got == set()


def test_a_registered_name_stays_megatrons(tmp_path, candidate):
    # registrars may install under the project's own settings only: a use of the name is still checked
    project = make_project(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/patches.py": PATCHES, "pkg/adaptor.py": """
        from pkg.patches import batched_p2p_ops
        def apply(register):
            register("megatron.core.p2p.get_send_recv_group", batched_p2p_ops)
        """, "pkg/use.py": """
        from megatron.core import p2p
        def run():
            return p2p.get_send_recv_group()
        """})
    report = surface_gate(str(candidate), project)
    missing = {(f.path, f.name) for f in report.findings if f.kind == c.MISSING_NAME}
    assert missing == {("pkg/use.py", "megatron.core.p2p.get_send_recv_group")}


def test_a_replaced_static_forward_is_checked(tmp_path, candidate):
    # an autograd Function's forward: megatron's apply() runs whatever forward is installed
    got = gate(tmp_path, candidate, """
        def install(register):
            from pkg.patches import narrow_wrapper
            register("megatron.core.layers.LinearFn.forward", narrow_wrapper)
        """)
    assert got == {("pkg/patches.py", 17, "megatron.core.layers.LinearFn.forward(wgrad_deferral_limit=)", False)}


def test_a_replacement_defined_twice_is_not_read(tmp_path, candidate):
    # which of two top-level defs of one name is installed depends on the import: nothing is said of it
    project = make_project(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/twice.py": """
        def forward(self, hidden_states, attention_mask):
            return hidden_states
        def forward(self, hidden_states, attention_mask, inference_context=None):
            return hidden_states
        """, "pkg/adaptor.py": """
        from megatron.core.attention import Attention
        from pkg.twice import forward
        Attention.forward = forward
        """})
    report = surface_gate(str(candidate), project)
    assert {f.name for f in report.findings if f.kind == c.OVERRIDE} == set()
