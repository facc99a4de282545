"""The surface gate on synthetic candidates (tiny wheels built here) and synthetic projects: every finding kind,
guarded and unguarded, both directions, the window table, "not shipped", the model cache, bounded reads, CLI."""
from __future__ import annotations

import hashlib
import json
import os
import textwrap
import zipfile
from pathlib import Path

import pytest

from compat.tooling import refresh
from compat.tooling.cli import main
from compat.tooling.gate.surface import cache as surface_cache
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface import project as surface_project
from compat.tooling.gate.surface.cache import release_models
from compat.tooling.gate.surface.lookup import Surface
from compat.tooling.gate.surface.release_gate import surface_gate

# A small megatron-core: 0.1.0 (old), 0.2.0 (the break), with the shapes the real wheels have.
BASE = {
    "megatron/core/__init__.py": """
        from megatron.core import parallel_state
        from .enums import ModelType
        mpu = parallel_state
        """,
    "megatron/core/parallel_state.py": """
        def get_data_parallel_rank(with_context_parallel=False):
            return 0
        def initialize_model_parallel(tensor_model_parallel_size=1, *, order="tp-dp", **kwargs):
            pass
        """,
    "megatron/core/enums.py": """
        import enum
        class ModelType(enum.Enum):
            encoder_or_decoder = 1
            encoder_and_decoder = 2
        """,
    "megatron/core/packed_seq_params.py": """
        from dataclasses import dataclass
        @dataclass
        class PackedSeqParams:
            qkv_format: str = None
            cu_seqlens_q: object = None
        """,
    "megatron/core/config.py": """
        from dataclasses import dataclass, field
        @dataclass
        class ModelParallelConfig:
            tensor_model_parallel_size: int = 1
        @dataclass
        class TransformerConfig(ModelParallelConfig):
            num_layers: int = 0
            hidden_size: int = 0
            derived: int = field(init=False, default=0)
        """,
    "megatron/core/distributed/__init__.py": "from .ddp import DistributedDataParallel\n",
    "megatron/core/distributed/ddp.py": """
        class DistributedDataParallel:
            def __init__(self, config, ddp_config, module, disable_bucketing=False):
                self.module = module
        """,
    "megatron/core/distributed/custom_fsdp/__init__.py": "class FullyShardedDataParallel:\n    pass\n",
    "megatron/core/utils.py": """
        def get_batch_on_this_cp_rank(batch, cp_group=None):
            return batch
        def unwrap_model(model):
            return model
        """,
    "megatron/core/transformer/experimental/__placeholder__.py": "X = 1\n",  # a directory without __init__.py
}

NEW = {
    **BASE,
    "megatron/core/enums.py": """
        import enum
        class ModelType(enum.Enum):
            encoder_or_decoder = 1
        """,
    "megatron/core/packed_seq_params.py": """
        from dataclasses import dataclass
        @dataclass
        class PackedSeqParams:
            qkv_format: str = None
            cu_seqlens_q: object = None
            total_tokens: int = None
        """,
    "megatron/core/utils.py": """
        def get_batch_on_this_cp_rank(batch, is_hybrid_cp, cp_group=None):
            return batch
        def unwrap_model(model):
            return model
        """,
    "megatron/core/distributed/custom_fsdp/__init__.py": None,  # removed
    "megatron/core/distributed/fsdp/__init__.py": "class FullyShardedDataParallel:\n    pass\n",
    "megatron/training/__init__.py": "",
    "megatron/training/arguments.py": "def parse_args():\n    pass\n",
}

MID = {  # 0.1.5: encoder_and_decoder is a deprecated property, the way 0.14-0.16 had it
    **BASE,
    "megatron/core/enums.py": """
        import enum
        class ModelType(enum.Enum):
            encoder_or_decoder = 1
            @property
            def encoder_and_decoder(self):
                \"\"\"Deprecated property - use encoder_or_decoder instead.\"\"\"
                raise ValueError("deprecated")
        """,
}


def make_wheel(directory: Path, version: str, files: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"megatron_core-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"megatron_core-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: megatron-core\nVersion: {version}\n")
        for name, text in files.items():
            if text is not None:
                z.writestr(name, textwrap.dedent(text))
    return path


def make_project(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@pytest.fixture
def releases(tmp_path, monkeypatch):
    """An isolated cache holding three synthetic releases, modelled (the history column sees all three); the
    index lists them (no network)."""
    paths = fresh_releases(tmp_path, monkeypatch)
    release_models()
    return paths


def synthetic_releases(tmp_path, monkeypatch, files_by_version: dict) -> dict:
    """A synthetic release wheel per version (its files) in an isolated cache, which the index lists (no
    network); none modelled yet."""
    wheels = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(wheels.parent))
    paths = {version: make_wheel(wheels, version, files) for version, files in files_by_version.items()}
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {v: False for v in paths})
    return paths


def fresh_releases(tmp_path, monkeypatch) -> dict:
    """Three synthetic release wheels in an isolated cache, none modelled yet."""
    return synthetic_releases(tmp_path, monkeypatch, {"0.1.0": BASE, "0.1.5": MID, "0.2.0": NEW})


def test_a_first_run_models_only_the_candidate_and_the_release_before_it(tmp_path, monkeypatch):
    wheels = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(wheels.parent))
    training = {"megatron/core/__init__.py": "", "megatron/training/__init__.py": ""}
    paths = {"0.1.0": make_wheel(wheels, "0.1.0", {**training, "megatron/training/old.py": "x = 1\n"}),
             "0.2.0": make_wheel(wheels, "0.2.0", training), "0.3.0": make_wheel(wheels, "0.3.0", training)}
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.training.old import x
        from megatron.training.tokenizer import build_tokenizer
        """})
    first = surface_gate(str(paths["0.3.0"]), project)
    assert set(release_models(modelled_only=True)) == {"0.2.0", "0.3.0"}  # 0.2.0: the override check's baseline
    assert first.history_releases == ["0.2.0", "0.3.0"]
    assert any("history from the 2 of 3 cached releases" in n for n in first.notes)
    # "not shipped" comes from every cached wheel's file list, modelled or not: 0.1.0 ships training.old
    assert {(f.name, f.kind) for f in first.findings} == {
        ("megatron.training.old", c.MISSING_MODULE), ("megatron.training.tokenizer", c.NOT_SHIPPED)}
    second = surface_gate(str(paths["0.1.0"]), project)
    assert second.history_releases == ["0.1.0", "0.2.0", "0.3.0"] and not any("history" in n for n in second.notes)


def findings(report, kind=None, guarded=None):
    return [f for f in report.findings if (kind is None or f.kind == kind)
            and (guarded is None or f.guarded == guarded)]


def names(items) -> set:
    return {f.name for f in items}


# ---- candidate model ---------------------------------------------------------------------------------------------
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


# ---- findings of every kind ----------------------------------------------------------------------------------------
UPGRADE_PROJECT = {
    "app/model.py": """
        from megatron.core.enums import ModelType
        from megatron.core.distributed.custom_fsdp import FullyShardedDataParallel
        from megatron.core.packed_seq_params import PackedSeqParams
        from megatron.core.utils import get_batch_on_this_cp_rank
        from megatron.core import parallel_state as mpu
        import megatron.core.parallel_state as ps

        def build(batch):
            kind = ModelType.encoder_and_decoder
            params = PackedSeqParams(qkv_format="thd", total_tokens=3)
            rank = mpu.get_data_parallel_rank(with_context_parallel=True)
            ps.get_data_parallel_rank(False, True)
            return get_batch_on_this_cp_rank(batch, cp_group=None)
        """,
}


def test_upgrade_reports_each_kind_with_file_line_and_history(tmp_path, releases):
    project = make_project(tmp_path / "proj", UPGRADE_PROJECT)
    report = surface_gate(str(releases["0.2.0"]), project)
    by_kind = {f.kind: f for f in report.findings}
    assert by_kind[c.MISSING_MODULE].name == "megatron.core.distributed.custom_fsdp"
    assert by_kind[c.MISSING_MODULE].line == 3 and by_kind[c.MISSING_MODULE].path == "app/model.py"
    assert by_kind[c.MISSING_MODULE].history["removed_in"] == "0.2.0"
    member = by_kind[c.MISSING_MEMBER]
    assert member.name == "megatron.core.enums.ModelType.encoder_and_decoder" and member.line == 10
    assert member.close == ["encoder_or_decoder"]
    assert member.history == {"works_in": ["0.1.0..0.1.5"], "last_in": "0.1.5", "removed_in": "0.2.0"}
    required = by_kind[c.MISSING_REQUIRED]
    assert required.name == "megatron.core.utils.get_batch_on_this_cp_rank(is_hybrid_cp=)" and required.line == 14
    assert by_kind[c.TOO_MANY_POSITIONAL].line == 13
    assert c.UNEXPECTED_KEYWORD not in by_kind  # total_tokens exists in 0.2.0
    assert all(not f.guarded for f in report.findings) and report.exit_code == 1


def test_floor_direction_reports_what_an_older_release_lacks(tmp_path, releases):
    project = make_project(tmp_path / "proj", UPGRADE_PROJECT)
    report = surface_gate(str(releases["0.1.0"]), project)
    keyword = findings(report, c.UNEXPECTED_KEYWORD)
    assert names(keyword) == {"megatron.core.packed_seq_params.PackedSeqParams(total_tokens=)"}
    assert keyword[0].history["added_in"] == "0.2.0" and keyword[0].line == 11
    assert keyword[0].close == [] and "added in 0.2.0" in keyword[0].instead
    assert not findings(report, c.MISSING_MODULE) and not findings(report, c.MISSING_MEMBER)


def test_deprecated_member_is_reported_without_failing(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.enums import ModelType
        x = ModelType.encoder_and_decoder
        """})
    report = surface_gate(str(releases["0.1.5"]), project)
    (dep,) = report.findings
    assert dep.kind == c.DEPRECATED and dep.line == 3 and "Deprecated property" in dep.instead
    assert report.exit_code == 0


def test_a_package_warning_is_about_the_imports_after_it_not_every_import(tmp_path, releases):
    wheel = make_wheel(tmp_path / "w", "0.3.0", {
        "megatron/core/__init__.py": "",
        "megatron/core/contexts/__init__.py": """
            import warnings
            from .static import Static
            warnings.warn("The following imports will be removed from this file", DeprecationWarning)
            from .dynamic import Dynamic
            """,
        "megatron/core/contexts/static.py": "class Static:\n    pass\n",
        "megatron/core/contexts/dynamic.py": "class Dynamic:\n    pass\n",
        "megatron/core/old/__init__.py": "import warnings\nwarnings.warn('old is deprecated', DeprecationWarning)\n",
        "megatron/core/old/x.py": "y = 1\n",
    })
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.contexts import Static
        from megatron.core.contexts import Dynamic
        from megatron.core.contexts.dynamic import Dynamic as D
        import megatron.core.old
        """})
    report = surface_gate(str(wheel), project, history=False)
    assert {(f.line, f.kind) for f in report.findings} == {(3, c.DEPRECATED), (5, c.DEPRECATED)}
    assert report.exit_code == 0


def test_unexpected_keyword_on_a_plain_function_and_kwargs_acceptance(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core import parallel_state
        parallel_state.get_data_parallel_rank(partial_data_parallel=True)
        parallel_state.initialize_model_parallel(2, anything_goes=1)
        parallel_state.initialize_model_parallel(2, 3)
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    got = {(f.line, f.kind, f.name) for f in report.findings}
    assert got == {(3, c.UNEXPECTED_KEYWORD, "megatron.core.parallel_state.get_data_parallel_rank(partial_data_parallel=)"),
                   (5, c.TOO_MANY_POSITIONAL, "megatron.core.parallel_state.initialize_model_parallel(…)")}


# ---- guards ----------------------------------------------------------------------------------------------------------
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


def test_scopes_params_shadow_imports_and_function_imports_count(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core import parallel_state as mpu
        def uses_param(mpu):
            return mpu.get_nothing()  # a parameter, not the module
        def imports_inside():
            from megatron.core.enums import ModelType as MT
            return MT.encoder_and_decoder
        class Model:
            def method(self):
                return mpu.get_also_nothing()
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.line, f.name) for f in report.findings} == {
        (7, "megatron.core.enums.ModelType.encoder_and_decoder"),
        (10, "megatron.core.parallel_state.get_also_nothing")}


def test_project_assignments_and_super_init(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        import megatron.core.parallel_state
        from megatron.core.distributed import DistributedDataParallel
        megatron.core.parallel_state.patched_in = lambda: 0
        megatron.core.parallel_state.patched_in()
        class MyDDP(DistributedDataParallel):
            def __init__(self, module):
                super().__init__(None, None, module, bucket_size=1)
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.line, f.kind, f.name) for f in report.findings} == {
        (8, c.UNEXPECTED_KEYWORD, "megatron.core.distributed.DistributedDataParallel(bucket_size=)")}


# ---- not shipped, against, window ------------------------------------------------------------------------------------
def test_packages_the_wheel_does_not_ship_are_not_removals(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.training.arguments import parse_args
        from megatron.training.tokenizer import build_tokenizer
        from megatron.bridge import AutoBridge
        """})
    old = surface_gate(str(releases["0.1.0"]), project)
    assert {f.kind for f in old.findings} == {c.NOT_SHIPPED} and old.exit_code == 0
    assert any("0.2.0" in f.instead for f in old.findings if f.name.startswith("megatron.training"))
    new = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.name, f.kind) for f in new.findings} == {
        ("megatron.training.tokenizer", c.NOT_SHIPPED), ("megatron.bridge", c.NOT_SHIPPED)}


def test_the_projects_own_megatron_namespace_is_not_checked(tmp_path, releases):
    project = make_project(tmp_path / "proj", {
        "src/megatron/bridge/__init__.py": "from megatron.bridge.models import AutoBridge\n",
        "src/megatron/bridge/models.py": "from megatron.core.enums import ModelType\nAutoBridge = ModelType.nope\n",
    })
    report = surface_gate(str(releases["0.2.0"]), project)
    assert report.scan.own_packages == ["megatron.bridge"]
    assert names(report.findings) == {"megatron.core.enums.ModelType.nope"}


def test_names_re_exported_through_the_projects_own_megatron_package_are_followed(tmp_path, releases):
    project = make_project(tmp_path / "proj", {
        "src/megatron/bridge/__init__.py": "",
        "src/megatron/bridge/state.py": "from megatron.core import parallel_state as mpu\n",
        "src/megatron/bridge/train.py": "from megatron.bridge.state import mpu\nmpu.never_existed()\n",
        "src/megatron/bridge/helpers.py": "def make(x):\n    return x\n",
        "tests/test_helpers.py": "from megatron.bridge.helpers import make\nmake(1)\n",  # not 'not shipped'
    })
    report = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.path, f.line, f.name) for f in report.findings} == {
        ("src/megatron/bridge/train.py", 2, "megatron.core.parallel_state.never_existed")}


def test_a_package_the_against_wheel_does_not_ship_hides_no_failure(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": "from megatron.training.arguments import gone_in_new\n"})
    report = surface_gate(str(releases["0.2.0"]), project, against=str(releases["0.1.0"]))
    assert [(f.kind, f.on_against) for f in report.findings] == [(c.MISSING_NAME, False)]  # 0.1.0 does not know it
    assert report.exit_code == 1


def test_against_separates_failures_that_already_exist(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.enums import ModelType
        from megatron.core import parallel_state as mpu
        ModelType.encoder_and_decoder
        mpu.never_existed()
        """})
    report = surface_gate(str(releases["0.2.0"]), project, against=str(releases["0.1.0"]))
    flags = {f.name: f.on_against for f in report.findings}
    assert flags == {"megatron.core.enums.ModelType.encoder_and_decoder": False,
                     "megatron.core.parallel_state.never_existed": True}
    assert report.exit_code == 1 and [f.line for f in report.breaking] == [4]


def test_window_table_use_by_release(tmp_path, releases, capsys):
    project = make_project(tmp_path / "proj", UPGRADE_PROJECT)
    code = main(["gate", "--project", str(project), "--window", "0.1.0..0.2.0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["releases"] == ["0.1.0", "0.1.5", "0.2.0"] and out["supported"] == []
    rows = {(r["line"], r["name"]): r["cells"] for r in out["rows"]}
    assert rows[(10, "megatron.core.enums.ModelType.encoder_and_decoder")] == {
        "0.1.0": "ok", "0.1.5": "deprecated", "0.2.0": "BREAKS"}
    assert rows[(11, "megatron.core.packed_seq_params.PackedSeqParams(total_tokens=)")] == {
        "0.1.0": "BREAKS", "0.1.5": "BREAKS", "0.2.0": "ok"}
    main(["gate", "--project", str(project), "--window", "0.1.0..0.2.0"])
    text = capsys.readouterr().out
    assert "| 0.1.0 | 0.1.5 | 0.2.0 |" in text and "supported (no unguarded break): none" in text


# ---- cache ---------------------------------------------------------------------------------------------------------
def test_model_cache_is_reused_and_a_corrupt_entry_is_rebuilt(tmp_path, releases, monkeypatch):
    wheel = releases["0.2.0"]
    first = surface_cache.model_for(wheel)
    assert Surface(first).resolve("megatron.core.enums.ModelType.encoder_or_decoder").ok
    surface_cache.save_models()  # the enum's module is in the entry now
    (entry,) = [p for p in surface_cache.cache_dir().iterdir() if p.name.startswith(first["sha256"])]
    calls = []
    real_plan = surface_cache._plan
    monkeypatch.setattr(surface_cache, "_plan", lambda *a: calls.append(1) or real_plan(*a))
    monkeypatch.setattr(surface_cache, "_LIVE", {})  # every model_for below reads the cache, as a new process does
    assert surface_cache.model_for(wheel) == first and calls == []  # read from the cache
    digest, _, body = entry.read_bytes().partition(b"\n")
    entry.write_bytes(digest + b"\n" + body.replace(b"encoder_or_decoder", b"encoder_XX_decoder"))
    surface_cache._LIVE.clear()
    assert surface_cache.model_for(wheel) == first and calls == [1]  # the digest no longer matches
    surface_cache._LIVE.clear()
    truncated = entry.read_bytes().partition(b"\n")[2][:-10]
    entry.write_bytes(hashlib.sha256(truncated).hexdigest().encode() + b"\n" + truncated)
    assert surface_cache.model_for(wheel) == first and calls == [1, 1]  # a consistent digest of broken JSON
    other = surface_cache.model_for(releases["0.1.0"])
    entry.write_bytes(next(p for p in surface_cache.cache_dir().iterdir()
                           if p.name.startswith(other["sha256"])).read_bytes())
    surface_cache._LIVE.clear()
    assert surface_cache.model_for(wheel) == first and calls == [1, 1, 1]  # another wheel's entry (0.1.0: cached)
    surface_cache._LIVE.clear()
    assert surface_cache.model_for(wheel) == first and calls == [1, 1, 1]  # the rebuilt entry is trusted again


def test_a_save_drops_older_model_formats_of_the_wheel_and_keeps_newer_ones(tmp_path, releases):
    model = surface_cache.model_for(releases["0.1.0"])
    key = model["sha256"]
    assert Surface(model).resolve("megatron.core.enums.ModelType").ok  # a module modelled: the save writes
    folder = surface_cache.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    older, newer = (folder / f"{key}.model{surface_cache.MODEL_FORMAT + d}.json" for d in (-1, 1))
    for entry in (older, newer):
        entry.write_text("another checkout's entry")
    surface_cache.save_models()
    assert not older.exists() and newer.read_text() == "another checkout's entry"
    assert (folder / f"{key}.model{surface_cache.MODEL_FORMAT}.json").is_file()


def test_an_unwritable_cache_does_not_stop_the_gate(tmp_path, releases, monkeypatch):
    monkeypatch.setattr(surface_cache, "cache_dir", lambda: tmp_path / "file-not-dir" / "x")
    (tmp_path / "file-not-dir").write_text("")
    model = surface_cache.model_for(releases["0.1.0"])
    assert model["cache"].startswith("not cached")


# ---- bounded project reads -----------------------------------------------------------------------------------------
def test_project_reads_are_bounded_and_skip_links_vcs_and_venvs(tmp_path, releases, monkeypatch):
    project = make_project(tmp_path / "proj", {
        "ok.py": "from megatron.core.enums import ModelType\nModelType.gone\n",
        ".git/hooks/x.py": "from megatron.core.enums import ModelType\nModelType.gone\n",
        "venv/lib/x.py": "from megatron.core.enums import ModelType\nModelType.gone\n",
        "env2/pyvenv.cfg": "",
        "env2/lib/x.py": "from megatron.core.enums import ModelType\nModelType.gone\n",
        "big.py": "# megatron\n" + "x = 1\n" * 20,
        "broken.py": "import megatron.core\ndef (:\n",
    })
    (project / "linked.py").symlink_to(project / "ok.py")
    os.mkfifo(project / "fifo.py")
    monkeypatch.setattr(surface_project, "MAX_FILE_BYTES", 64)
    scan = surface_project.scan_project(project)
    assert {u.path for u in scan.uses} == {"ok.py"}
    skipped = dict(scan.skipped)
    assert "over 64 bytes" in skipped["big.py"] and "does not parse" in skipped["broken.py"]
    assert "fifo.py" in skipped  # not a regular file: refused, not opened
    monkeypatch.setattr(surface_project, "MAX_FILES", 3)
    with pytest.raises(surface_project.ProjectError, match="over 3 Python files"):
        surface_project.scan_project(project)


# ---- CLI -----------------------------------------------------------------------------------------------------------
def test_cli_exit_codes(tmp_path, releases, capsys):
    clean = make_project(tmp_path / "clean", {"a.py": "from megatron.core import parallel_state\n"})
    broken = make_project(tmp_path / "broken", UPGRADE_PROJECT)
    new = str(releases["0.2.0"])
    assert main(["gate", new, "--project", str(clean)]) == 0
    assert main(["gate", new, "--project", str(broken)]) == 1
    capsys.readouterr()
    assert main(["gate", new, "--project", str(broken), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["findings"][0]) >= {"path", "line", "name", "kind", "guarded", "instead"}
    assert main(["gate", "--project", str(clean), "--window", "0.2.0"]) == 2
    assert main(["gate", "--project", str(clean), "--window", "0.2.0..0.1.0"]) == 2
    assert main(["gate", new, "--project", str(clean), "--window", "0.1.0..0.2.0"]) == 2
    assert main(["gate", "--window", "0.1.0..0.2.0"]) == 2
    assert main(["gate", new, "--project", str(clean), "--accept"]) == 2
    assert main(["gate"]) == 2  # the config gate still needs a candidate
    capsys.readouterr()
    assert main(["gate", new, "--project", str(tmp_path / "missing")]) == 3
    corrupt = tmp_path / "megatron_core-9.9.9-py3-none-any.whl"
    corrupt.write_bytes(b"PK\x03\x04 not a zip")
    assert main(["gate", str(corrupt), "--project", str(clean)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err) and "Traceback" not in "".join(err)


def test_markdown_escapes_project_text(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"we|ird`name\n## x.py": """
        from megatron.core.enums import ModelType
        ModelType.gone
        """})
    text = surface_gate(str(releases["0.2.0"]), project).to_markdown()
    row = next(line for line in text.splitlines() if "ModelType.gone" in line)
    assert "\\n## x.py" in row and "\n## x" not in text and "we\\|ird" in row


def test_a_positional_argument_that_now_lands_on_a_keyword_parameter(tmp_path, releases):
    files = {**NEW, "megatron/core/optim.py": """
        def get_megatron_optimizer(config, model_chunks, config_overrides=None, use_gloo_process_groups=True):
            pass
        """}
    wheel = make_wheel(tmp_path / "w", "0.3.0", files)
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.optim import get_megatron_optimizer
        get_megatron_optimizer(cfg, model, no_wd, scale_lr,
                               use_gloo_process_groups=False)
        get_megatron_optimizer(cfg, model, use_gloo_process_groups=False)
        """})
    (finding,) = surface_gate(str(wheel), project).findings
    assert (finding.kind, finding.line) == (c.GIVEN_TWICE, 4)  # the keyword's own line
    assert finding.name == "megatron.core.optim.get_megatron_optimizer(use_gloo_process_groups=)"


def test_version_flags_by_name_and_data_flags_are_not_guards(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.packed_seq_params import PackedSeqParams
        from .compat import mcore_017, HAVE_TE
        def f(batch):
            has_packed = batch is not None
            if mcore_017:
                PackedSeqParams(total_tokens=1)
            if HAVE_TE:
                PackedSeqParams(total_tokens=2)
            if has_packed:
                PackedSeqParams(total_tokens=3)
        """})
    report = surface_gate(str(releases["0.1.0"]), project)
    # HAVE_TE comes from elsewhere and is about another package: it does not guard a PackedSeqParams keyword
    assert {(f.line, f.guarded) for f in report.findings} == {(7, True), (9, False), (11, False)}


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


def test_the_other_branch_of_a_probe_runs_only_where_the_attribute_is_missing(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core import parallel_state as mpu
        from megatron.core.enums import ModelType
        def group():
            if hasattr(mpu, "get_data_parallel_rank"):
                return mpu.get_data_parallel_rank()
            else:
                return ModelType.encoder_and_decoder
        def other():
            if not hasattr(mpu, "get_data_parallel_rank"):
                return ModelType.encoder_and_decoder
            return getattr(mpu, "get_new", None) or ModelType.encoder_and_decoder
        def missing_probe():
            if hasattr(mpu, "get_new"):
                return 1
            return ModelType.encoder_and_decoder
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    by_line = {f.line: f for f in report.findings if "encoder_and_decoder" in f.name}
    assert by_line[8].guarded and "not taken" in by_line[8].guard
    assert by_line[11].guarded and "not taken" in by_line[11].guard
    assert not by_line[12].guarded  # get_new is missing: the `or` branch runs
    assert not by_line[16].guarded  # get_new is missing: the code after the early return runs
