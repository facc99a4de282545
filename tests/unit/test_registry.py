"""The committed registry against the independent research table (shared/research/ddp_schema/SUMMARY.md)."""
import pytest

from compat import registry_format
from compat.registry import registry
from compat.tooling import refresh
from compat.tooling.extract import extract_candidate

# Field counts per release, from the research summary (extracted independently of this code).
SUMMARY_COUNTS = {
    "0.7.0": 5, "0.8.0": 6, "0.9.0": 9, "0.10.0": 10, "0.11.0": 10, "0.12.0": 18, "0.12.1": 18, "0.12.2": 18,
    "0.12.3": 18, "0.13.0": 21, "0.13.1": 21, "0.14.0": 25, "0.15.0": 25, "0.15.1": 25, "0.15.2": 25,
    "0.15.3": 25, "0.16.0": 27, "0.16.1": 27, "0.17.0": 32, "0.17.1": 33, "0.18.0": 37, "0.18.1": 37,
    "0.18.2": 37, "0.19.0": 38, "0.19.1": 38, "0.19.2": 38,
}


def test_every_release_from_0_7_with_summary_field_counts():
    reg = registry()
    assert reg.versions() == list(SUMMARY_COUNTS)
    assert {v: len(reg.schema(v, config="ddp").fields) for v in reg.versions()} == SUMMARY_COUNTS


def test_yanked_releases_are_marked():
    reg = registry()
    assert [v for v in reg.versions() if reg.is_yanked(v)] == ["0.18.1", "0.19.1"]
    assert reg.newest() == "0.19.2"


def test_no_field_default_or_annotation_ever_changed():
    reg = registry()
    seen = {}
    for v in reg.versions():
        for f in reg.schema(v, config="ddp").fields:
            assert seen.setdefault(f.name, (f.annotation, f.default_text)) == (f.annotation, f.default_text), (v, f)


@pytest.mark.parametrize("version, reads", [
    ("0.12.3", set()),
    ("0.13.1", {"reuse_grad_buf_for_mxfp8_param_ag", "fp8_param_gather"}),
    ("0.17.0", {"param_name_patterns_for_fp32_local_accumulation", "grad_reduce_in_fp32"}),
    ("0.18.0", {"num_buckets", "bucket_size"}),
    ("0.19.0", {"megatron_fsdp_max_pool_double_buffer"}),
])
def test_post_init_reads(version, reads):
    assert reads <= registry().schema(version, config="ddp").post_init_reads
    assert reads or not registry().schema(version, config="ddp").post_init_reads


def test_optimizer_precision_fields_recorded():
    reg = registry()
    names = {f.name for f in reg.schema("0.19.2", config="optimizer").fields}
    assert {"use_precision_aware_optimizer", "main_grads_dtype", "use_layer_wise_distributed_optimizer",
            "muon_nesterov", "bf16", "optimizer"} <= names
    assert "use_precision_aware_optimizer" not in {f.name for f in reg.schema("0.10.0", config="optimizer").fields}


@pytest.mark.network
@pytest.mark.slow
def test_regenerating_from_the_real_wheels_is_byte_identical(tmp_path):
    """Every class of every release; and `gate --accept` (add_release, one release at a time) writes the same."""
    reg = registry()
    wheels = {v: (refresh.download(v), reg.is_yanked(v)) for v in reg.versions()}
    rebuilt = refresh.dumps(refresh.build_registry(wheels))
    committed = (refresh.Path(refresh.__file__).parents[1] / "data" / "registry.json").read_text(encoding="utf-8")
    assert rebuilt == committed
    grown = registry_format.subset(reg.data, reg.versions()[:-3])
    for version in reg.versions()[-3:]:
        grown = refresh.add_release(grown, version, reg.is_yanked(version), extract_candidate(wheels[version][0]))
    assert refresh.dumps(grown) == committed
    assert {k for r in reg.data["releases"] for k in r["configs"]} == {
        "ddp", "optimizer", "adam_optimizer", "sgd_optimizer", "transformer", "mla"}


def test_the_compact_registry_keeps_every_field_of_a_check():
    # Registry reads a check from the shared table and gives it the snapshot's line: every other field of the
    # record must survive (a positional rebuild once dropped id, evidence, since, until and sets)
    from compat.registry import Registry, schema_from_snapshot

    release = next(r for r in registry_format.decode(registry().data) if r["version"] == "0.19.2")
    post = release["configs"]["ddp"]["post_init"]
    post["checks"].append({"kind": "coerce", "exception": "", "when": ["self.overlap_param_gather"], "test": None,
                           "message": None, "reads": ["overlap_param_gather"], "skip": None, "line": 77,
                           "owner": "DistributedDataParallelConfig", "id": "example", "evidence": ["a.py:1"],
                           "since": "0.19.0", "until": "0.19.2", "sets": {"overlap_grad_reduce": True}})
    read = Registry(registry_format.encode([release])).schema("0.19.2", config="ddp").checks
    assert list(read) == list(schema_from_snapshot("0.19.2", "registry", release["configs"]["ddp"], config="ddp").checks)
    assert read[-1].sets == (("overlap_grad_reduce", True),) and read[-1].line == 77 and read[-1].id == "example"
