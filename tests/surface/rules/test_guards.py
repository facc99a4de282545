"""What guards a use: try/except of the matching exception, hasattr/getattr probes, version checks,
inspect.signature checks; a guard must be about the use it guards (a handler for another exception, a test of
something else, an import flag of another import is none), and an except clause catches what its expression
evaluates to."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import breaking_places as where
from ..builders import gate_on_pair as gate
from ..builders import make_project, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


GUARDED_PROJECT = {
    "g.py": """
        import inspect
        from packaging import version
        from megatron.core import parallel_state as mpu
        from megatron.core.enums import ModelType
        from megatron.core.packed_seq_params import PackedSeqParams

        try:
            from megatron.core.distributed.custom_fsdp import FullyShardedDataParallel
        except ImportError:
            from megatron.core.distributed.fsdp import FullyShardedDataParallel

        try:
            from megatron.core.distributed.custom_fsdp import FullyShardedDataParallel as Old
        except ImportError:
            Old = None

        try:
            kind = ModelType.encoder_and_decoder
        except AttributeError:
            kind = None

        MCORE_GE_2 = version.parse(megatron_version) >= version.parse("0.2.0")

        def f(is_megatron_version_ge):
            if hasattr(mpu, "get_nothing"):
                mpu.get_nothing()
            if is_megatron_version_ge("0.2.0"):
                PackedSeqParams(total_tokens=1)
            if MCORE_GE_2:
                PackedSeqParams(total_tokens=2)
            if "total_tokens" in inspect.signature(PackedSeqParams).parameters:
                PackedSeqParams(total_tokens=3)
            getattr(mpu, "get_other", None)
            if Old is not None:
                Old()
            try:
                PackedSeqParams(total_tokens=4)
            except TypeError:
                pass
        """,
}


@pytest.mark.parametrize("version, expected", [
    ("0.2.0", {9: "try/except ImportError", 14: "try/except ImportError", 19: "try/except AttributeError",
               26: "hasattr/getattr probe", 27: "branch of a hasattr/getattr probe that is not taken",
               34: "hasattr/getattr probe"}),
    ("0.1.0", {11: "fallback of a try/except ImportError that is not taken", 26: "hasattr/getattr probe",
               27: "branch of a hasattr/getattr probe that is not taken",
               29: "version check", 31: "version check", 33: "inspect.signature check",
               34: "hasattr/getattr probe", 38: "try/except TypeError"}),
])
def test_guards_of_each_kind(tmp_path, releases, version, expected):
    project = make_project(tmp_path / "proj", GUARDED_PROJECT)
    report = surface_gate(str(releases[version]), project)
    assert all(f.guarded for f in report.findings), [f for f in report.findings if not f.guarded]
    assert {f.line: f.guard.split(" (line")[0].split(": the")[0] for f in report.findings} == expected
    assert report.exit_code == 0


def test_a_guard_for_one_exception_does_not_protect_another(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.enums import ModelType
        from megatron.core import parallel_state as mpu
        try:
            x = ModelType.encoder_and_decoder
        except ImportError:
            x = None
        try:
            import megatron.core.distributed.custom_fsdp
        except ImportError as exc:
            raise RuntimeError("needs custom_fsdp") from exc
        if hasattr(mpu, "get_data_parallel_rank"):  # about another name, and there: the branch runs
            y = ModelType.encoder_and_decoder
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.line, f.guarded) for f in report.breaking} == {(5, False), (9, False), (13, False)}


@pytest.mark.parametrize("imported, expected", [
    ("import modelopt", {(11, False)}),  # about another package
    ("from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank", {(4, True), (11, False)}),
])
def test_an_import_flag_guards_only_its_own_imports(tmp_path, wheels, imported, expected):
    report = gate(tmp_path, wheels, {"d.py": f"""
        from megatron.core.schedules import get_tensor_shapes
        try:
            {imported}
            HAVE_IT = True
        except ImportError:
            HAVE_IT = False
        def shapes(config):
            if not HAVE_IT:
                return None
            return get_tensor_shapes(rank=0, seq_length=8, micro_batch_size=1, config=config)
        """})
    assert {(f.line, f.guarded) for f in report.findings} == expected
    assert report.exit_code == 1


@pytest.mark.parametrize("test", ["torch.cuda.is_available()", "conversion", "args.inversion_mode",
                                  "torch.__version__ >= '2.0'", "is_te_min_version('1.0')"])
def test_tests_about_something_else_are_not_guards(tmp_path, wheels, test):
    report = gate(tmp_path, wheels, {"a.py": f"""
        import torch
        from megatron.core.schedules import get_tensor_shapes
        def f(args, conversion, config, is_te_min_version):
            if {test}:
                get_tensor_shapes(rank=0, seq_length=8, micro_batch_size=1, config=config)
        """})
    assert where(report, guarded=False) == {("a.py", 6, c.UNEXPECTED_KEYWORD)}


def test_an_early_return_on_dist_availability_is_not_a_guard(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        import torch.distributed as dist
        from megatron.core import mpu
        def rank():
            if not dist.is_available():
                return 0
            return mpu.get_tensor_and_expert_parallel_rank()
        """})
    assert where(report, guarded=False) == {("a.py", 7, c.MISSING_NAME)}


def test_an_except_clause_catches_what_its_expression_evaluates_to(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        try:
            from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
        except ImportError or ModuleNotFoundError:
            pass
        try:
            from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
        except AttributeError or ImportError:
            pass
        try:
            from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
        except (ValueError, KeyError and ModuleNotFoundError):
            pass
        """})
    # ``A or B`` is A (a class is truthy), ``A and B`` is B: the second handler catches AttributeError only
    assert {(f.line, f.guarded) for f in report.findings} == {(3, True), (7, False), (11, True)}
