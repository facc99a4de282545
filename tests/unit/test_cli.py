import json
import subprocess
import sys

import hostile_inputs as H
import pytest

from compat.tooling.cli import main


def run(*args):
    """``python -m compat ARGS`` in a child: the entry point and the interpreter's exit code (test_exit_codes)."""
    return subprocess.run([sys.executable, "-m", "compat", *args], capture_output=True, text=True)


def here(*args):
    """The same command called in this process (hostile_inputs.call_cli): what it prints and returns."""
    return H.call_cli(args)


@pytest.mark.parametrize("version, name", [("0.13.1", "use_custom_fsdp"), ("0.19.2", "use_megatron_fsdp")])
def test_explain_shows_the_versions_name_with_provenance(version, name):
    proc = here("explain", "--mcore", version, "--set", "use_megatron_fsdp=true", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["kwargs"] == {name: True}
    field = out["fields"]["use_megatron_fsdp"]
    assert (field["value"], field["source"], field["target_name"]) == (True, "user", name)


def test_explain_lists_every_canonical_field_with_a_source():
    out = json.loads(here("explain", "--mcore", "0.16.1", "--optimizer", "adam", "--json").stdout)
    assert out["fields"]["grad_reduce_in_fp32"]["source"] == "resolver"
    assert {f["source"] for f in out["fields"].values()} == {"resolver", "megatron-default", "absent"}
    assert out["fields"]["num_buckets"]["source"] == "absent"


def test_explain_precision_aware_flags():
    out = json.loads(here("explain", "--mcore", "0.19.2", "--precision-aware", "--main-grads-dtype", "bf16",
                          "--json").stdout)
    # the precision-aware optimizer is a DistributedOptimizer: DDP follows (cross rule)
    assert out["kwargs"] == {"grad_reduce_in_fp32": False, "use_distributed_optimizer": True}
    assert out["fields"]["use_distributed_optimizer"]["source"] == "cross-config rule"


@pytest.mark.parametrize("args, code, phrase", [
    (["explain", "--set", "nonsense=1"], 3, "python -m compat fields"),
    (["explain", "--set", "bucket_sise=1"], 3, "did you mean 'bucket_size'"),
    (["explain", "--mcore", "0.10.0", "--set", "use_megatron_fsdp=true"], 3, "0.14.0-0.19.2"),
    (["explain", "--mcore", "banana"], 3, "does not parse"),
    (["explain", "--set", "novalue"], 2, "key=value"),
    (["bogus"], 2, "invalid choice"),
])
def test_exit_codes(args, code, phrase):
    proc = run(*args)
    assert proc.returncode == code
    assert phrase in proc.stderr and "Traceback" not in proc.stderr


def test_fields_json():
    out = json.loads(here("fields", "--mcore", "0.8.0", "--json").stdout)
    assert [f["name"] for f in out["fields"]] == ["grad_reduce_in_fp32", "overlap_grad_reduce",
                                                  "use_distributed_optimizer", "check_for_nan_in_grad",
                                                  "bucket_size", "average_in_collective"]


def test_main_returns_codes_in_process(capsys):
    assert main(["explain", "--mcore", "0.19.2", "--set", "grad_reduce_in_fp32=\"yes\""]) == 3
    assert "expected bool" in capsys.readouterr().err


def test_import_does_not_import_torch_or_megatron():
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import compat"], capture_output=True,
                          text=True)
    assert proc.returncode == 0
    modules = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line}
    assert "compat" in modules
    assert not modules & {"torch", "megatron", "numpy", "yaml"}


# ------------------------------------------------------------------------------------ every config class
def test_explain_config_transformer_lists_every_field_with_checks():
    # 3 layers, 1 of them on the first of 2 stages (2 layers on 1 stage: megatron refuses, 1 middle layer, no stage)
    proc = here("explain", "--config", "transformer", "--mcore", "0.16.1", "--set", "num_layers=3",
                "--set", "first_pipeline_num_layers=1", "--set", "pipeline_model_parallel_size=2",
                "--set", "pipeline_dtype=float32", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["class"] == "TransformerConfig" and out["kwargs"] == {
        "num_layers": 3, "num_layers_in_first_pipeline_stage": 1, "pipeline_model_parallel_size": 2,
        "pipeline_dtype": "float32"}
    assert out["fields"]["num_layers_in_first_pipeline_stage"]["given_as"] == ["first_pipeline_num_layers"]
    assert out["prechecks"]["checks"] == 149 and len(out["fields"]) > 242


def test_fields_config_mla_lists_checks_and_why_some_are_not_pre_checked():
    out = json.loads(here("fields", "--config", "mla", "--mcore", "0.19.2", "--json").stdout)
    assert out["class"] == "MLATransformerConfig" and out["bases"] == ["TransformerConfig", "ModelParallelConfig"]
    assert len(out["fields"]) == 322 and len(out["checks"]) == 202
    skipped = [c for c in out["checks"] if not c["pre_checked"]]
    assert skipped and all(c["skip"] for c in skipped) and all(":" in c["where"] for c in out["checks"])


@pytest.mark.parametrize("args, code, phrase", [
    (["explain", "--config", "transformer", "--set", "num_layers=2", "--set", "num_layers=3"], 2,
     "--set num_layers is given more than once"),
    (["explain", "--config", "transformer", "--optimizer", "adam"], 2, "apply to --config ddp only"),
    (["explain", "--config", "mla", "--mcore", "0.9.0"], 3, "has no MLATransformerConfig (it exists in 0.10.0-0.19.2)"),
    (["explain", "--config", "optimizer", "--mcore", "0.19.2", "--set", "main_grads_dtype=bf16"], 3,
     "main_grads_dtype can only be fp32"),
    (["explain", "--config", "pipeline"], 2, "invalid choice"),
])
def test_config_exit_codes(args, code, phrase):
    proc = here(*args)
    assert proc.returncode == code and phrase in proc.stderr and "Traceback" not in proc.stderr


def test_explain_from_a_json_file(tmp_path):
    path = tmp_path / "optimizer.json"
    path.write_text(json.dumps({"optimizer": "adam", "muon_use_nesterov": True, "lr": 1e-4}))
    out = json.loads(here("explain", "--config", "optimizer", "--mcore", "0.18.0", "--from", str(path),
                          "--set", "lr=3e-4", "--json").stdout)
    assert out["kwargs"] == {"optimizer": "adam", "muon_nesterov": True, "lr": 3e-4}
    assert here("explain", "--from", str(tmp_path / "missing.json")).returncode == 2


def test_import_loads_no_submodule_and_every_export_resolves():
    code = ("import sys, compat; loaded = sorted(m for m in sys.modules if m.startswith('compat.')); "
            "names = {n: getattr(compat, n).__module__ for n in compat.__all__}; "
            "import compat.resolution, compat.config_audit; assert callable(compat.resolve) and callable(compat.audit); "
            "import json; print(json.dumps([loaded, names]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded, names = json.loads(proc.stdout)
    assert loaded == []  # `import compat` alone: public names load on first use
    import compat

    assert set(names) == set(compat.__all__) and "resolve_ddp_overrides" in names and "CompatError" in names
    assert all(module.startswith("compat.") for module in names.values())
    assert set(compat.__all__) <= set(dir(compat))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        compat.not_a_name  # noqa: B018


# `python -m compat ARGV` in a child; prints [exit code, the modules loaded by then]
_LOADED_AFTER = """import contextlib, io, json, runpy, sys
sys.argv = ["compat", *json.loads(sys.argv[1])]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module("compat", run_name="__main__")
    except SystemExit as exc:
        code = exc.code
print(json.dumps([code, sorted(sys.modules)]))
"""
_DOWNLOADER = ("compat.tooling.fetch", "compat.tooling.refresh", "http", "email", "urllib.request", "ssl")
_GATE = ("compat.tooling.gate", "compat.tooling.gate.surface")


@pytest.mark.parametrize("argv, absent, present", [
    (["--help"], ("compat.resolution", "compat.tooling.vendor", *_GATE, *_DOWNLOADER), "compat.tooling.cli"),
    (["explain", "--mcore", "0.16.1", "--json"], ("compat.tooling.vendor", *_GATE, *_DOWNLOADER), "compat.resolution"),
    (["fields", "--mcore", "0.16.1"], ("compat.tooling.vendor", *_GATE, *_DOWNLOADER), "compat.resolution"),
    (["vendor", "--help"], (*_GATE, *_DOWNLOADER), "compat.tooling.vendor"),
    (["gate", "--help"], ("compat.tooling.vendor", "compat.tooling.gate.surface", *_DOWNLOADER),
     "compat.tooling.gate.cli"),
])
def test_a_command_imports_only_what_it_needs(argv, absent, present):
    proc = subprocess.run([sys.executable, "-c", _LOADED_AFTER, json.dumps(argv)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    code, loaded = json.loads(proc.stdout)
    assert code == 0 and present in loaded
    assert [m for m in loaded if any(m == a or m.startswith(a + ".") for a in absent)] == []


def test_help_lists_every_command_from_the_table():
    from compat.tooling.cli import COMMANDS

    listing = " ".join(here("--help").stdout.split())  # argparse wraps long help lines
    for name, command in COMMANDS.items():
        assert f"{name} {command.help}" in listing
        with pytest.raises(SystemExit) as done:  # the table's module and function load and take --help
            main([name, "--help"])
        assert done.value.code == 0
