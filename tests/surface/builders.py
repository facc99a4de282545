"""Builders shared by the surface-gate tests: small synthetic candidate releases (as wheels in an isolated cache the
index lists, so no network), the projects written next to them, and helpers that run the gate on a project. Plain
functions and constants; each test module wraps the releases it uses in its own fixture (``releases`` is in
conftest.py)."""
from __future__ import annotations

import textwrap
import zipfile
from pathlib import Path

from compat.tooling import refresh
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

# A small megatron-core: 0.1.0 (old), 0.2.0 (the break), with the shapes the real wheels have; 0.1.5 in between.
# The ``releases`` fixture (conftest.py) caches and models all three.
RELEASE_0_1_0 = {
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


RELEASE_0_2_0 = {
    **RELEASE_0_1_0,
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


RELEASE_0_1_5 = {  # 0.1.5: encoder_and_decoder is a deprecated property, the way 0.14-0.16 had it
    **RELEASE_0_1_0,
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
    """A megatron-core wheel of ``version`` holding ``files`` (path -> source, dedented; None: left out)."""
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
    """A project under ``root``: ``files`` (path -> source, dedented)."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


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
    return synthetic_releases(tmp_path, monkeypatch,
                              {"0.1.0": RELEASE_0_1_0, "0.1.5": RELEASE_0_1_5, "0.2.0": RELEASE_0_2_0})


def names(items) -> set:
    """The names of some findings."""
    return {f.name for f in items}


# A project that uses every finding kind the 0.1.0 -> 0.2.0 break makes
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


# A candidate pair for the rule tests: 0.3.0 and 0.4.0 (the breaks).
PAIR_0_3_0 = {
    "megatron/core/__init__.py": "from megatron.core import parallel_state\nmpu = parallel_state\n",
    "megatron/core/parallel_state.py": """
        def get_tensor_model_parallel_rank():
            return 0
        def get_tensor_and_expert_parallel_rank():
            return 0
        """,
    "megatron/core/module.py": """
        class MegatronModule:
            def __init__(self, config):
                self.config = config
        """,
    "megatron/core/llava.py": """
        from megatron.core.module import MegatronModule
        class LLaVAModel(MegatronModule):
            def __init__(self, config, vision, language, extra):
                super().__init__(config)
        """,
    "megatron/core/schedules.py": """
        def get_tensor_shapes(*, rank=0, seq_length, micro_batch_size, config):
            return []
        """,
    "megatron/core/specs.py": """
        def get_moe_module_spec(use_te=True, num_experts=None, moe_grouped_gemm=False,
                                moe_use_legacy_grouped_gemm=False):
            return None
        """,
    "megatron/core/ddp.py": """
        class DistributedDataParallel:
            def __init__(self, config, module, overlap_grad_reduce=False, ddp_config=None):
                self.module = module
        """,
    "megatron/core/strategies/__init__.py": "",
    "megatron/core/strategies/base.py": "class Strategy:\n    pass\n",
    "megatron/core/strategies/async_utils.py": """
        class AsyncCallsQueue:
            def __init__(self, persistent=False):
                self.persistent = persistent
            def schedule_async_request(self, request):
                pass
        """,
    "megatron/core/old_scheduler.py": "class OptimizerParamScheduler:\n    pass\n",
    "megatron/core/attention.py": """
        from megatron.core.module import MegatronModule
        class SelfAttention(MegatronModule):
            def __init__(self, config, submodules, layer_number, model_comm_pgs=None):
                super().__init__(config)
            def forward(self, hidden_states, attention_mask, key_value_states=None):
                return hidden_states
            def hook(self, x, y):
                return x
        """,
    "megatron/core/backend.py": """
        class Backend:
            def run(self, x):
                return self.compute(x, 1)
            def compute(self, x, *args, **kwargs):
                return x
        """,
    "megatron/training/__init__.py": "",
    "megatron/training/training.py": """
        from megatron.training.setup import get_model
        def pretrain(datasets_provider, model_provider, model_type, forward_step_func):
            return setup_model_and_optimizer(model_provider, model_type=model_type)
        def setup_model_and_optimizer(model_provider_func, model_type):
            return get_model(model_provider_func, model_type)
        """,
    "megatron/training/setup.py": """
        def get_model(model_provider_func, model_type, wrap_with_ddp=True):
            return [model_provider_func(pre_process=True, post_process=True)]
        """,
}


PAIR_0_4_0 = {  # the breaks
    **PAIR_0_3_0,
    "megatron/core/parallel_state.py": "def get_tensor_model_parallel_rank():\n    return 0\n",
    "megatron/core/schedules.py": """
        def get_tensor_shapes(*, seq_length, micro_batch_size, config):
            return []
        """,
    "megatron/core/specs.py": """
        def get_moe_module_spec(use_te=True, num_experts=None, moe_grouped_gemm=False):
            return None
        """,
    "megatron/core/ddp.py": """
        class DistributedDataParallel:
            def __init__(self, config, ddp_config, module):
                self.module = module
        """,
    "megatron/core/attention.py": """
        from megatron.core.module import MegatronModule
        class SelfAttention(MegatronModule):
            def __init__(self, config, submodules, layer_number, pg_collection=None, name=None):
                super().__init__(config)
            def forward(self, hidden_states, attention_mask, key_value_states=None, attention_bias=None):
                return hidden_states
            def hook(self, x):
                return x
        """,
    "megatron/core/backend.py": """
        class Backend:
            def run(self, x):
                return self.compute(x, mask=None)
            def compute(self, x, *args, **kwargs):
                return x
        """,
    "megatron/training/setup.py": """
        def get_model(model_provider_func, model_type, wrap_with_ddp=True):
            return [model_provider_func(pre_process=True, post_process=True, vp_stage=i) for i in range(2)]
        """,
}


def pair_releases(tmp_path, monkeypatch) -> dict:
    """Both releases of the pair in an isolated cache, which the index lists (no network)."""
    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))
    paths = {"0.3.0": make_wheel(cache, "0.3.0", PAIR_0_3_0), "0.4.0": make_wheel(cache, "0.4.0", PAIR_0_4_0)}
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {v: False for v in paths})
    return paths


def gate_on_pair(tmp_path, wheels, files: dict, version="0.4.0"):
    """The gate on a project of ``files`` against ``wheels[version]`` (the pair by default)."""
    return surface_gate(str(wheels[version]), make_project(tmp_path / "proj", files))


def breaking_places(report, guarded=None) -> set:
    """(path, line, kind) of the report's breaking findings, guarded or not or either."""
    return {(f.path, f.line, f.kind) for f in report.findings
            if f.kind in c.BREAKING and (guarded is None or f.guarded == guarded)}


# the spec helper a candidate ships next to the classes that build project modules from specs
SPEC_UTILS = """
    class ModuleSpec:
        def __init__(self, module, params=None, submodules=None):
            self.module = module
    def build_module(spec, *args, **kwargs):
        return spec.module(*args, **kwargs)
    """


# A TransformerConfig for project subclasses of it: 0.3.0 has ``legacy_gemm``, 0.4.0 ``new_gemm`` instead.
SUBCLASS_CONFIG = """
    from dataclasses import dataclass
    @dataclass
    class TransformerConfig:
        num_layers: int = 1
        {field}
        def describe(self, verbose=False):
            return ""
    """


def subclass_releases(tmp_path, monkeypatch) -> dict:
    """SUBCLASS_CONFIG's two releases in an isolated cache, which the index lists (no network)."""
    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))
    paths = {version: make_wheel(cache, version, {
        "megatron/core/__init__.py": "",
        "megatron/core/transformer_config.py": SUBCLASS_CONFIG.format(field=field)})
        for version, field in (("0.3.0", "legacy_gemm: bool = False"), ("0.4.0", "new_gemm: bool = False"))}
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {v: False for v in paths})
    return paths


# the project's own subclass of TransformerConfig
SUBCLASS_MODEL_CONFIG = """
    from dataclasses import dataclass
    from megatron.core.transformer_config import TransformerConfig
    @dataclass
    class ModelConfig(TransformerConfig):
        own_field: int = 0
        def __post_init__(self):
            self.derived = 2
    """


def subclass_findings(tmp_path, wheels, files: dict, version: str) -> set:
    """The breaking findings of a project of ``files``: (path, line, kind, last part of the name)."""
    report = surface_gate(str(wheels[version]), make_project(tmp_path / "p", files))
    return {(f.path, f.line, f.kind, f.name.rsplit(".", 1)[1]) for f in report.findings if f.kind in c.BREAKING}


# A candidate whose get_model always passes ``config=`` to the model provider (pretrain hands it on).
PROVIDER_TRAINING = """
    def get_model(model_provider_func, model_type=None):
        return [model_provider_func(pre_process=True, post_process=True, config=None)]
    def pretrain(dataset_provider, model_provider, model_type=None):
        return get_model(model_provider, model_type)
    """


def provider_candidate(tmp_path, monkeypatch) -> Path:
    """PROVIDER_TRAINING's release 0.4.0 in an isolated cache, which the index lists (no network)."""
    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))
    files = {"megatron/__init__.py": "", "megatron/training/__init__.py": "",
             "megatron/training/setup.py": PROVIDER_TRAINING}
    path = make_wheel(cache, "0.4.0", files)
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {"0.4.0": False})
    return path
