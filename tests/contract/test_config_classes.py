"""Every config class against the live dataclass of the session's megatron-core: OptimizerConfig (and its 0.16-0.17
Adam/SGD subclasses), TransformerConfig, MLATransformerConfig (DDPConfig: test_contract.py).

Fields, order and defaults equal the registry; a battery of real configs builds; the known ``__post_init__`` checks
are hit from both sides; and no pre-check refuses a config the real class accepts (hypothesis over a palette)."""
import dataclasses
import warnings

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from live_helpers import BASE, battery, setup

import compat
from compat import ConstraintError
from compat import version as v
from compat.build import live_schema
from compat.dtypes import dtype_name, to_torch
from compat.kwargs import materialize
from compat.resolution import resolve

pytestmark = pytest.mark.megatron  # skipped by conftest.py where megatron-core is not installed

CONFIGS = ["optimizer", "adam_optimizer", "sgd_optimizer", "transformer", "mla"]


@pytest.fixture(scope="module")
def installed():
    return v.installed_version()


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _expr_matches(text: str, value) -> bool:
    """A default kept as source text (F.gelu, AttnBackend.auto) names the live value."""
    last = text.rsplit(".", 1)[-1]
    if hasattr(value, "name") and type(value).__name__ in text:  # an enum member
        return value.name == last
    return getattr(value, "__name__", None) == last


@pytest.mark.parametrize("config", CONFIGS)
def test_fields_order_and_defaults_equal_registry(config, installed):
    cls, entry = setup(config, installed)
    live = dataclasses.fields(cls)
    assert [f.name for f in live] == list(entry.names)
    for f, known in zip(live, entry.fields):
        value = _default(f)
        if known.required:
            assert value is dataclasses.MISSING, f.name
        elif known.exact:
            shown = str(value).removeprefix("torch.") if type(value).__module__ == "torch" else value
            if isinstance(shown, (list, tuple)):
                assert list(shown) == list(known.default) and type(shown) is type(known.default), f.name
            else:
                assert shown == known.default and type(shown) is type(known.default), f.name
        else:
            assert _expr_matches(known.default_text, value), (f.name, known.default_text, value)


@pytest.mark.parametrize("config", CONFIGS)
def test_checks_read_from_the_live_source_equal_the_registry(config, installed):
    """The registry's __post_init__ checks (from the wheel) are what the installed source says."""
    from compat.build import _post_init_from_source

    cls, entry = setup(config, installed)
    facts = _post_init_from_source(cls, {f.name: f.annotation for f in entry.fields})
    assert [(c["kind"], c["when"], c["test"], c["skip"]) for c in facts["checks"]] == \
        [(c.kind, list(c.when), c.test, c.skip) for c in entry.checks]
    assert set(facts["reads"]) == set(entry.post_init_reads)


@pytest.mark.parametrize("config", CONFIGS)
def test_battery_builds_real_objects_and_every_value_survives(config, installed):
    cls, entry = setup(config, installed)
    for overrides in battery(config, set(entry.names)):
        kwargs = compat.config_kwargs(config, overrides, installed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            built = compat.build_config(config, overrides, cls=cls)
            again = compat.build_config(config, overrides, cls=cls)
        assert type(built) is cls and built is not again
        for name, value in kwargs.items():
            if name not in entry.post_init_writes:
                assert getattr(built, name) == value, (overrides, name)


def test_muon_nesterov_lands_on_the_field_megatron_reads(installed):
    cls, entry = setup("optimizer", installed)
    names = set(entry.names)
    if "muon_nesterov" in names:
        assert compat.build_optimizer_config({"muon_use_nesterov": True}, cls=cls).muon_nesterov is True
    elif "muon_use_nesterov" in names:
        assert compat.build_optimizer_config({"muon_nesterov": True}, cls=cls).muon_use_nesterov is True
    else:
        with pytest.raises(compat.UnsupportedFieldError, match=r"0.18.0-0.19.2 \(as muon_use_nesterov in 0.16.0-0.17.1\)"):
            compat.build_optimizer_config({"muon_nesterov": True}, cls=cls)


# (config, overrides, the field a release must have for the check to exist): both sides must refuse
VIOLATIONS = {
    "tf-fp16-and-bf16": ("transformer", {"fp16": True, "bf16": True}, "bf16"),
    "tf-heads-not-divisible-by-tp": ("transformer", {"num_attention_heads": 4, "tensor_model_parallel_size": 3},
                                     "tensor_model_parallel_size"),
    "tf-expert-parallel-without-experts": ("transformer", {"expert_model_parallel_size": 2},
                                           "expert_model_parallel_size"),
    "mpc-sequence-parallel-without-tp": ("transformer", {"sequence_parallel": True}, "sequence_parallel"),
    "mpc-pipeline-without-dtype": ("transformer", {"pipeline_model_parallel_size": 2}, "pipeline_dtype"),
    "mla-fp16-and-bf16": ("mla", {"fp16": True, "bf16": True}, "bf16"),
    "opt-precision-aware-with-sgd": ("optimizer", {"use_precision_aware_optimizer": True, "optimizer": "sgd",
                                                   "use_distributed_optimizer": True},
                                     "use_precision_aware_optimizer"),
    "opt-precision-aware-without-distributed": ("optimizer", {"use_precision_aware_optimizer": True},
                                                "use_precision_aware_optimizer"),
    "opt-bf16-main-grads-without-precision-aware": ("optimizer", {"main_grads_dtype": "bf16"}, "main_grads_dtype"),
    "opt-mxfp8-reuse-with-overlap-step": ("optimizer", {"reuse_grad_buf_for_mxfp8_param_ag": True,
                                                        "overlap_param_gather_with_optimizer_step": True},
                                          "reuse_grad_buf_for_mxfp8_param_ag"),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_known_post_init_checks_both_sides(case, installed):
    config, overrides, needs = VIOLATIONS[case]
    cls, entry = setup(config, installed)
    if needs not in entry.names:
        pytest.skip(f"megatron-core {installed} has no {needs}")
    overrides = {**BASE.get(config, {}), **overrides}
    unchecked = resolve(overrides, config=config, version=installed, prechecks=False)
    raw_kwargs = materialize(unchecked.kwargs, unchecked)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cls(**raw_kwargs)
            megatron_refuses = False
        except (ValueError, AssertionError, RuntimeError, TypeError):
            megatron_refuses = True
    checks = [c for c in entry.checks if c.skip is None and set(c.reads) & set(overrides) - set(BASE.get(config, {}))]
    if not megatron_refuses:
        pytest.skip(f"megatron-core {installed} accepts {overrides} (no such check in this release)")
    assert checks, f"megatron-core {installed} refuses {overrides} but no evaluable check reads those fields"
    with pytest.raises(ConstraintError, match=r"__post_init__"):
        compat.build_config(config, overrides, cls=cls)
    with pytest.raises(ConstraintError):
        resolve(overrides, config=config, version=installed)


# ------------------------------------------------------------------ no false positives, by property
PALETTE = {
    "transformer": {
        "num_layers": st.sampled_from([1, 2, 3, 4]), "hidden_size": st.sampled_from([32, 64, 96]),
        "num_attention_heads": st.sampled_from([1, 2, 3, 4, 8]), "tensor_model_parallel_size": st.sampled_from([1, 2, 3]),
        "pipeline_model_parallel_size": st.sampled_from([1, 2]), "sequence_parallel": st.booleans(),
        "context_parallel_size": st.sampled_from([1, 2]), "expert_model_parallel_size": st.sampled_from([1, 2]),
        "bf16": st.booleans(), "fp16": st.booleans(), "pipeline_dtype": st.sampled_from([None, "bf16", "fp32"]),
        "num_query_groups": st.sampled_from([None, 1, 2, 3, 4]), "ffn_hidden_size": st.sampled_from([None, 128]),
        "kv_channels": st.sampled_from([None, 16]), "num_moe_experts": st.sampled_from([None, 0, 2, 4]),
        "moe_router_topk": st.sampled_from([1, 2]), "moe_expert_capacity_factor": st.sampled_from([None, 1.0]),
        "moe_token_dispatcher_type": st.sampled_from(["allgather", "alltoall"]),
        "moe_pad_expert_input_to_capacity": st.booleans(),
        "moe_router_load_balancing_type": st.sampled_from(["aux_loss", "none", "sinkhorn"]),
        "moe_shared_expert_intermediate_size": st.sampled_from([None, 0, 64]),
        "recompute_granularity": st.sampled_from([None, "full", "selective"]),
        "recompute_method": st.sampled_from([None, "uniform", "block"]),
        "recompute_num_layers": st.sampled_from([None, 1, 2]), "distribute_saved_activations": st.booleans(),
        "virtual_pipeline_model_parallel_size": st.sampled_from([None, 2]),
        "cpu_offloading": st.booleans(), "cpu_offloading_num_layers": st.sampled_from([0, 1, 5]),
        "defer_embedding_wgrad_compute": st.booleans(), "gradient_accumulation_fusion": st.booleans(),
        "wgrad_deferral_limit": st.sampled_from([0, -1]), "add_bias_linear": st.booleans(),
        "gated_linear_unit": st.booleans(), "bias_activation_fusion": st.booleans(),
        "fp8_param": st.booleans(), "overlap_p2p_comm": st.booleans(), "batch_p2p_comm": st.booleans(),
        "overlap_p2p_comm_warmup_flush": st.booleans(), "variable_seq_lengths": st.booleans(),
        "num_layers_in_first_pipeline_stage": st.sampled_from([None, 0, 1]),
        "account_for_embedding_in_pipeline_split": st.booleans(), "mtp_num_layers": st.sampled_from([None, 1]),
        "moe_router_enable_expert_bias": st.booleans(), "moe_router_score_function": st.sampled_from(["softmax", "sigmoid"]),
        "moe_router_pre_softmax": st.booleans(), "hidden_dropout": st.sampled_from([0.0, 0.1]),
        "attention_dropout": st.sampled_from([0.0, 0.1]), "multi_latent_attention": st.booleans(),
        "rotary_interleaved": st.booleans(), "moe_layer_recompute": st.booleans(),
        "recompute_modules": st.sampled_from([None, ["core_attn"], ["moe_act"], ["mla_up_proj"]]),
        "moe_router_group_topk": st.sampled_from([None, 1, 2]), "moe_router_num_groups": st.sampled_from([None, 2]),
        "moe_router_topk_limited_devices": st.sampled_from([None, 1]),
        "flash_attention_version": st.sampled_from([None, 1, 2, 3]), "batch_invariant_mode": st.booleans(),
    },
    "optimizer": {
        "optimizer": st.sampled_from(["adam", "sgd", "muon"]), "use_precision_aware_optimizer": st.booleans(),
        "use_distributed_optimizer": st.booleans(), "bf16": st.booleans(), "fp16": st.booleans(),
        "main_grads_dtype": st.sampled_from(["fp32", "bf16"]), "main_params_dtype": st.sampled_from(["fp32", "fp16"]),
        "exp_avg_dtype": st.sampled_from(["fp32", "bf16"]), "exp_avg_sq_dtype": st.sampled_from(["fp32", "bf16"]),
        "optimizer_cpu_offload": st.booleans(), "reuse_grad_buf_for_mxfp8_param_ag": st.booleans(),
        "overlap_param_gather_with_optimizer_step": st.booleans(), "overlap_param_gather": st.booleans(),
        "use_layer_wise_distributed_optimizer": st.booleans(), "lr": st.sampled_from([None, 1e-4]),
        "fp8_recipe": st.sampled_from([None, "delayed", "mxfp8"]),
    },
}
PALETTE["mla"] = {**PALETTE["transformer"], "rope_type": st.sampled_from(["rope", "yarn"]),
                  "apply_rope_fusion": st.booleans(), "cache_mla_latents": st.booleans()}


@st.composite
def drawn_config(draw, config, names):
    palette = {k: s for k, s in PALETTE[config].items() if k in names}
    keys = draw(st.lists(st.sampled_from(sorted(palette)), min_size=1, max_size=8, unique=True))
    out = {k: draw(palette[k]) for k in keys}
    return {**BASE.get(config, {}), **{k: x for k, x in out.items() if x is not None or k not in BASE.get(config, {})}}


@pytest.mark.parametrize("config", ["transformer", "mla", "optimizer"])
def test_no_pre_check_refuses_a_config_megatron_accepts(config, installed):
    cls, entry = setup(config, installed)
    names = set(entry.names)
    live = live_schema(cls, config)
    outcomes = {"both refuse": 0, "megatron only": 0, "both accept": 0}

    dtypes = {f.name for f in entry.fields if "dtype" in f.type.kinds()}

    # max_examples from the profile tests/run_policy.py picks (quick locally, full in CI; tests/conftest.py)
    @settings(deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(drawn_config(config, names))
    def run(overrides):
        try:  # any refusal counts: a pre-check (ConstraintError) or a type/Literal check
            resolve(overrides, config=config, schema=live)
            ours = None
        except compat.CompatError as exc:
            ours = exc
        raw = {k: to_torch(dtype_name(x)) if k in dtypes and isinstance(x, str) else x for k, x in overrides.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                cls(**raw)
                accepted = True
            except Exception:  # any refusal (ValueError, AssertionError, a TE import, a TypeError on None)
                accepted = False
        assert not (ours is not None and accepted), f"false positive: {overrides} is accepted by megatron, " \
                                                    f"refused by the pre-check: {ours}"
        kind = "both refuse" if ours is not None else ("both accept" if accepted else "megatron only")
        outcomes[kind] += 1
        event(kind)

    run()
    print(f"{config} on {installed}: {outcomes}")
    if any(c.skip is None for c in entry.checks):
        assert outcomes["both refuse"] > 0, outcomes  # the property was not vacuous


def test_a_bridge_style_subclass_is_read_from_its_source(installed):
    """A provider class that subclasses the real TransformerConfig, adds a field and a check of its own."""
    cls, entry = setup("transformer", installed)

    @dataclasses.dataclass
    class Provider(cls):
        seq_length: int = 1024

        def __post_init__(self):
            super().__post_init__()
            if self.seq_length <= 0:
                raise ValueError("seq_length must be positive")

    base = BASE["transformer"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = compat.build_transformer_config({**base, "seq_length": 2048}, cls=Provider)
    assert type(built) is Provider and built.seq_length == 2048
    with pytest.raises(ValueError, match="seq_length must be positive") as err:
        compat.build_transformer_config({**base, "seq_length": 0}, cls=Provider)
    # pre-checked, unless TransformerConfig's __post_init__ (0.18+) makes a write it cannot name before it:
    # then megatron's own ValueError, not a guess
    assert isinstance(err.value, ConstraintError) is not live_schema(Provider, "transformer").dynamic_writes
    with pytest.raises(ConstraintError, match="fp16"):  # the inherited checks, through super().__post_init__()
        compat.build_transformer_config({**base, "fp16": True, "bf16": True}, cls=Provider)
    with pytest.raises(compat.UnknownFieldError, match="seq_length"):
        compat.build_transformer_config({**base, "seq_length": 2048})  # the release's own class has no such field
