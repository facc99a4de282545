"""The candidate model: namespace directories, re-exports, aliases and compiled extensions are indexed, both branches
of a conditional definition bound and TYPE_CHECKING imports skipped, dataclass ``__init__`` synthesised from the
inheritance chain, a source tree is a candidate, and hostile candidate files are accepted, not fatal."""
from __future__ import annotations

from compat.tooling.gate.surface import cache as surface_cache
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.lookup import Surface
from compat.tooling.gate.surface.release_gate import surface_gate

from .builders import RELEASE_0_1_0 as BASE
from .builders import RELEASE_0_2_0 as NEW
from .builders import make_project, make_wheel


def test_model_indexes_namespace_dirs_reexports_aliases_and_extensions(tmp_path, releases):
    files = {**BASE, "megatron/core/datasets/helpers_cpp.cpython-312-x86_64-linux-gnu.so": "binary"}
    s = Surface(surface_cache.model_for(make_wheel(tmp_path / "w", "0.1.1", files)))
    assert s.resolve("megatron.core.transformer.experimental").ok  # no __init__.py, still importable
    assert s.resolve("megatron.core.distributed.DistributedDataParallel").ok  # re-export
    assert s.resolve("megatron.core.mpu.get_data_parallel_rank").ok  # mpu = parallel_state
    assert s.resolve("megatron.core.datasets.helpers_cpp.anything").ok  # compiled: not readable, accepted
    assert not s.resolve("megatron.core.mpu.get_nothing").ok
    assert not s.resolve("megatron.core.enums.ModelType.nothing").ok  # enums are closed
    assert s.resolve("megatron.core.enums.ModelType.value").ok  # what enum.Enum itself provides


def test_model_binds_both_branches_and_skips_type_checking(tmp_path, releases):
    files = {**BASE, "megatron/core/extensions.py": """
        from typing import TYPE_CHECKING
        try:
            from transformer_engine import Linear as TELinear
            HAVE_TE = True
        except ImportError:
            TELinear = None
            HAVE_TE = False
        if HAVE_TE:
            def te_only(a, *, fp8=False):
                pass
        else:
            def fallback_only():
                pass
        if TYPE_CHECKING:
            from megatron.core.utils import unwrap_model
        """}
    s = Surface(surface_cache.model_for(make_wheel(tmp_path / "w", "0.1.2", files)))
    for name in ("TELinear", "HAVE_TE", "te_only", "fallback_only"):
        assert s.resolve(f"megatron.core.extensions.{name}").ok, name
    assert not s.resolve("megatron.core.extensions.unwrap_model").ok  # bound only for type checkers


def test_dataclass_init_is_synthesised_from_the_inheritance_chain(tmp_path, releases):
    s = Surface(surface_cache.model_for(releases["0.1.0"]))
    target = s.resolve("megatron.core.config.TransformerConfig").targets[0]
    params = [p[0] for p in s.call_signature(target)["p"]]
    assert params == ["tensor_model_parallel_size", "num_layers", "hidden_size"]  # init=False field left out


def test_a_source_tree_is_a_candidate(tmp_path, releases):
    tree = tmp_path / "Megatron-LM"
    make_project(tree, {**{k: v for k, v in NEW.items() if v is not None},
                        "megatron/rl/__init__.py": "", "tests/test_x.py": "import megatron.core\n"})
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.rl import anything
        from megatron.core.enums import ModelType
        ModelType.encoder_and_decoder
        """})
    report = surface_gate(str(tree), project)
    assert {(f.line, f.kind) for f in report.findings} == {(2, c.MISSING_NAME), (4, c.MISSING_MEMBER)}
    assert len(list(surface_cache.cache_dir().glob("*.json"))) == len(releases)  # the history; a tree is not cached


def test_hostile_candidate_files_are_accepted_not_fatal(tmp_path, releases):
    deep = "X = " + " + ".join(['"a"'] * 5000) + "\n"
    files = {**BASE, "megatron/core/deep.py": deep, "megatron/core/broken.py": "def (:\n"}
    model = surface_cache.model_for(make_wheel(tmp_path / "w", "0.1.3", files))
    s = Surface(model)
    assert s.resolve("megatron.core.broken.anything").ok  # unreadable: nothing reported as removed
    assert "megatron/core/broken.py" in model["unparsed"]  # listed once its module is read
    assert s.resolve("megatron.core.enums.ModelType").ok
