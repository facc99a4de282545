"""Optional imports (try/except ImportError): the handler's fallback is dead where the import works, a flag set in
the handler selects the branch that runs only where it fails, a handler that turns a feature off is named, what the
handler binds again (or a re-raising handler) protects, and a fallback inside a function protects only that
function."""
from __future__ import annotations

import ast

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.fallbacks import optional_imports
from compat.tooling.gate.surface.model import statements
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import breaking_places as where
from ..builders import gate_on_pair as gate
from ..builders import make_project, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_fallback_handler_is_dead_where_the_import_succeeds(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        try:
            from megatron.core.utils import unwrap_model
        except ImportError:
            from megatron.core.enums import ModelType
            unwrap_model = ModelType.encoder_and_decoder
        """})
    (finding,) = surface_gate(str(releases["0.2.0"]), project).findings
    assert finding.guarded and "not taken" in finding.guard


def test_a_flag_set_in_the_handler_selects_a_branch_that_runs_only_where_the_import_fails(tmp_path, wheels):
    files = {"b.py": """
        from megatron.core.ddp import DistributedDataParallel
        try:
            from megatron.core.old_scheduler import OptimizerParamScheduler
            use_old_megatron = False
        except ImportError:
            use_old_megatron = True
        def wrap(module, config, ddp_config):
            if use_old_megatron:
                return DistributedDataParallel(config=config, module=module, overlap_grad_reduce=True)
            return DistributedDataParallel(config=config, ddp_config=ddp_config, module=module)
        """}
    report = gate(tmp_path, wheels, files)
    assert report.exit_code == 0
    assert {f.guard.split(":")[0] for f in report.findings} == {c.g.FALLBACK + " that is not taken"}


def test_a_handler_that_disables_a_feature_is_guarded_and_named(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        try:
            from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
            megatron_available = True
        except ImportError:
            megatron_available = False
        """})
    (finding,) = report.findings
    assert finding.guarded and "megatron_available = False" in finding.guard and "off" in finding.guard


@pytest.mark.parametrize("handler, elsewhere, guarded", [
    ("get_tensor_and_expert_parallel_rank = lambda: 0", "", True),  # rebound: the use reads the fallback
    ("from megatron.core.parallel_state import get_tensor_model_parallel_rank as get_tensor_and_expert_parallel_rank",
     "", True),
    ("HAVE_EP = False", "def enable():\n    assert HAVE_EP, 'expert ranks need a newer megatron-core'\n", True),
    ("get_tensor_and_expert_parallel_rank = None",
     "def enable():\n    if get_tensor_and_expert_parallel_rank is None:\n        raise RuntimeError('no EP')\n", True),
    ("HAVE_EP = False", "def ranks():\n    if HAVE_EP:\n        return 1\n    else:\n        return None\n", True),
    ("HAVE_EP = False", "", False),  # turned off but never tested: nothing stops the use
    ("HAVE_EP = False", "def keys(g):\n    assert set(g) - set(HAVE_EP) == set()\n", False),  # not about availability
    ("HAVE_EP = False", "def mode():\n    if HAVE_EP:\n        print('ep')\n", False),  # a branch guards itself only
    ("HAVE_EP = False", "def mode():\n    if HAVE_EP:\n        return 'ep'\n", False),  # on: leaves; off: goes on
    ("pass", "", False),
])
def test_a_use_of_a_name_the_fallback_binds_again_or_turns_off_and_checks(tmp_path, wheels, handler, elsewhere,
                                                                          guarded):
    files = {"a.py": f"""
try:
    from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
except ImportError:
    {handler}


def rank():
    return get_tensor_and_expert_parallel_rank()


{elsewhere}
"""}
    report = gate(tmp_path, wheels, files)
    use = [f for f in report.findings if 9 in (f.line, *f.also_at)]  # a guarded use joins the import's finding
    assert [f.kind for f in use if not f.guarded] == ([] if guarded else [c.MISSING_NAME])
    assert report.exit_code == (0 if guarded else 1)
    assert gate(tmp_path, wheels, files, "0.3.0").findings == []  # where the import works, nothing to say


@pytest.mark.parametrize("handler, test, guarded", [
    ("get_tensor_and_expert_parallel_rank = None", "self.enable_ep", True),  # a user turns the feature on
    ("HAVE_EP = False", "args.expert_parallel and self.ready(args)", True),  # one part of an `and` is a switch
    ("HAVE_EP = False", "not self.enable_ep", False),  # runs when the switch is off
    ("HAVE_EP = False", "args.ep_size > 1", False),  # a comparison is data, not a switch
    ("HAVE_EP = False", "torch.cuda.is_available()", False),
    ("HAVE_EP = False", "self.enable_ep or args.force", False),  # runs without the switch too
    ("pass", "self.enable_ep", False),  # nothing is turned off: the project did not plan for the failure
])
def test_an_optional_import_used_under_a_feature_switch(tmp_path, wheels, handler, test, guarded):
    files = {"a.py": f"""
try:
    from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
except ImportError:
    {handler}


class Trainer:
    def rank(self, args):
        if {test}:
            return get_tensor_and_expert_parallel_rank()
        return 0
"""}
    report = gate(tmp_path, wheels, files)
    use = [f for f in report.findings if 11 in (f.line, *f.also_at)]
    assert [f.kind for f in use if not f.guarded] == ([] if guarded else [c.MISSING_NAME])
    assert report.exit_code == (0 if guarded else 1)
    # a guarded use joins the import's finding; its own guard names the switch a user would turn on
    tree = ast.parse(files["a.py"])
    notes = [o.guard[3] for o in optional_imports(tree, list(statements(tree.body, into_defs=True)))
             if o.start <= 11 <= o.end and o.guard[0] == c.g.SWITCHED]
    assert notes == ([f"the fallback sets {handler.split()[0]} off, and this runs only when `{test.split(' and ')[0]}` "
                      "is on: turning it on where the import fails raises here"] if guarded else [])


def test_what_a_re_raising_handler_binds_protects_nothing(tmp_path, wheels):
    # a missing name raises ImportError, which the first handler does not catch; the second leaves the name unbound
    report = gate(tmp_path, wheels, {"a.py": """
        try:
            from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
        except ModuleNotFoundError:
            get_tensor_and_expert_parallel_rank = lambda: 0  # noqa: E731
            raise
        except ImportError:
            HAVE_EP = False
        def rank():
            return get_tensor_and_expert_parallel_rank()
        """})
    assert where(report, guarded=False) == {("a.py", 10, c.MISSING_NAME)}  # the import itself is guarded


def test_an_optional_import_still_checks_the_calls_where_it_imports(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        try:
            from megatron.core.schedules import get_tensor_shapes
        except ImportError:
            get_tensor_shapes = None
        def shapes(config):
            if get_tensor_shapes is None:
                return []
            return get_tensor_shapes(rank=0, seq_length=1, micro_batch_size=1, config=config)
        def raw(config):
            return get_tensor_shapes(rank=1, seq_length=1, micro_batch_size=1, config=config)
        """})
    assert where(report, guarded=False) == {("a.py", 9, c.UNEXPECTED_KEYWORD), ("a.py", 11, c.UNEXPECTED_KEYWORD)}


def test_a_fallback_inside_a_function_protects_only_that_function(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        import os
        def local():
            try:
                from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
            except ImportError:
                get_tensor_and_expert_parallel_rank = lambda: 0  # noqa: E731
            return get_tensor_and_expert_parallel_rank()
        def other():
            from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
            return get_tensor_and_expert_parallel_rank()
        """})
    assert where(report, guarded=False) == {("a.py", 10, c.MISSING_NAME)}  # line 11 joins line 10's finding
    assert [f.also_at for f in report.findings if f.line == 10] == [[11]]
    assert any(8 in (f.line, *f.also_at) for f in report.findings if f.guarded)
