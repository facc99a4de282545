"""The upgrade gate, replayed on real releases (gated against the registry as it was before each one)."""
from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import hostile_inputs as H
import pytest
from extraction_memo import extraction_memoized

from compat import registry_format
from compat import version as _v
from compat.configs import ALL_PATHS
from compat.registry import load_json, registry
from compat.tooling import gate as g
from compat.tooling import refresh
from compat.tooling.extract import DDP_PATH

ROOT = Path(__file__).resolve().parents[2]
network = pytest.mark.network


@pytest.fixture(autouse=True, scope="module")
def _gated_releases_extracted_once():
    """0.19.2 is gated six times below: its wheel is read once per worker, each test keeps its own gate run."""
    with extraction_memoized():
        yield


def run_cli(*args, env=None, matrix_tools=False):
    """``python -m compat gate ARGS``, called in this process (hostile_inputs.call_cli); with ``--matrix`` or
    ``matrix_tools``, the matrix tools' gate (``python -m tools.matrix gate``, this repository's matrix.yaml by
    default). tests/unit/test_cli.py and the hostile catalogue run the CLI in a child process."""
    return H.call_cli(["gate", *args], env=env, matrix_tools=matrix_tools or "--matrix" in args)


def real_config_text(version: str, path: str = DDP_PATH) -> str:
    with zipfile.ZipFile(refresh.download(version)) as z:
        return z.read(path).decode()


def real_config_files(version: str) -> dict[str, str]:
    """Every config file of a real release but DDPConfig's (a synthetic candidate is complete apart from its DDP)."""
    return {path: real_config_text(version, path) for path in ALL_PATHS if path != DDP_PATH}


def make_wheel(path: Path, config_text: str | None, version: str = "0.19.2", others: dict | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"megatron_core-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: megatron-core\nVersion: {version}\nRequires-Python: >=3.12\n")
        if config_text is not None:
            z.writestr(DDP_PATH, config_text)
        for name, body in (others or {}).items():
            z.writestr(name, body)
    return path


def by(report, level, what, field):
    return [c for c in report.by_level(level) if c.what == what and c.field == field]


def rules_as_of(version: str) -> dict:
    """rules.json as it was before constraints for later releases were written (their 'since')."""
    rules = load_json("rules.json")
    return {**rules, "constraints": [c for c in rules["constraints"] if not _v.is_newer(c["since"], version)]}


def assert_clean_failure(proc, *needles):
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


# ------------------------------------------------------------------------------------ real replays
@network
def test_014_vs_0131_rename_proposed_fsdp_added_doc_change():
    report = g.gate(refresh.download("0.14.0"), registry().truncated("0.13.1"))
    assert report.against == "0.13.1" and report.candidate == "0.14.0" and report.exit_code == 1

    [added] = by(report, g.DECISION, "added", "keep_fp8_transpose_cache")
    entry = added.proposal["renames.json"]
    assert entry == {**entry, "old": "keep_fp8_transpose_cache_when_using_custom_fsdp",
                     "new": "keep_fp8_transpose_cache", "since": "0.14.0"}
    assert "map" not in entry  # bool -> bool: a plain rename
    assert any("looks like a rename" in n for n in added.notes)

    [fsdp] = by(report, g.DECISION, "added", "use_megatron_fsdp")
    assert fsdp.new == "bool = False" and "FSDP" in " ".join(fsdp.notes)
    assert fsdp.proposal["renames.json"]["old"] == "use_custom_fsdp"  # from use_custom_fsdp's deprecation doc

    [doc] = by(report, g.INFO, "doc", "use_custom_fsdp")
    assert "deprecated" in doc.new and "deprecated" not in doc.old

    # the old name is in today's rename table, so its removal is breaking (mapped) and the proposal is known
    [removed] = by(report, g.BREAKING, "removed", "keep_fp8_transpose_cache_when_using_custom_fsdp")
    assert "keep_fp8_transpose_cache" in removed.shim and added.proposal["already_in_renames_json"]

    text = report.to_markdown()
    assert '"old": "keep_fp8_transpose_cache_when_using_custom_fsdp"' in text and "```json" in text
    assert text.index("## Breaking") < text.index("use_megatron_fsdp") < text.index("## Informational")


@network
def test_014_with_the_rename_table_of_its_time_proposes_a_new_entry():
    renames_then = [r for r in load_json("renames.json")["renames"] if not _v.is_newer(r["since"], "0.13.1")]
    report = g.gate(refresh.download("0.14.0"), registry().truncated("0.13.1"), renames={"ddp": renames_then})
    [removed] = by(report, g.DECISION, "removed", "keep_fp8_transpose_cache_when_using_custom_fsdp")
    assert "users may set it" in removed.notes
    [added] = by(report, g.DECISION, "added", "keep_fp8_transpose_cache")
    assert added.proposal["already_in_renames_json"] is False


@network
def test_017_vs_0161_mapped_removal_is_breaking_a_check_gated_by_a_new_field_is_a_decision():
    report = g.gate(refresh.download("0.17.0"), registry().truncated("0.16.1"))
    assert report.verdict == "breaking" and report.exit_code == 1
    [removed] = by(report, g.BREAKING, "removed", "preserve_fp32_weights")
    assert "megatron_fsdp_main_params_dtype" in removed.shim and removed.old == "bool = True"
    # `if len(self.param_name_patterns_for_fp32_local_accumulation) > 0: assert not self.grad_reduce_in_fp32`:
    # the resolver sets grad_reduce_in_fp32, but the check needs a new field (default ()) set: no old config trips it
    assert not by(report, g.BREAKING, "check", "grad_reduce_in_fp32")
    [check] = by(report, g.DECISION, "check", "grad_reduce_in_fp32")
    assert "resolver" in check.shim and "param_name_patterns_for_fp32_local_accumulation" in check.notes[0]
    assert any("fires only when param_name_patterns_for_fp32_local_accumulation" in n for n in check.notes)
    [new] = by(report, g.DECISION, "added", "param_name_patterns_for_fp32_local_accumulation")
    assert new.new == "Tuple[str, ...] = ()" and any("__post_init__ reads it" in n for n in new.notes)
    assert not by(report, g.DECISION, "added", "megatron_fsdp_main_params_dtype")[0].proposal  # not name-alike


@network
def test_018_vs_0171_bucket_size_check_is_classified_by_what_pins_it():
    wheel = refresh.download("0.18.0")
    report = g.gate(wheel, registry().truncated("0.17.1"))
    [check] = by(report, g.DECISION, "check", "bucket_size")  # pinned, and the extracted check pre-checks it
    assert "pre-checked assert at megatron/core/distributed/distributed_data_parallel_config.py:261" in check.shim
    assert any('value rule {"min": 1}' in n for n in check.notes) and "num_buckets" in check.notes[0]
    assert by(report, g.DECISION, "added", "num_buckets")

    # with the rules of its time no curated rule models it, the extracted check still does; and `if
    # self.num_buckets is not None: assert self.bucket_size is None` needs the new num_buckets (default None) set:
    # no 0.17.1 config can trip it, a decision at most
    then = g.gate(wheel, registry().truncated("0.17.1"), rules=rules_as_of("0.17.1"))
    [check] = by(then, g.DECISION, "check", "bucket_size")
    assert "rules.json" not in check.shim and "pre-checked assert" in check.shim
    assert any("fires only when num_buckets" in n for n in check.notes)


@network
def test_newest_release_against_previous_minor_via_cli():
    proc = run_cli("megatron-core==0.19.2", "--against", "0.18.2")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    # TransformerConfig changed a default (moe_deepep_num_sms 20 -> None): breaking; DDPConfig needs review only
    assert out.startswith("# Upgrade gate: megatron-core 0.19.2 vs registry 0.18.2: BREAKING")
    assert "**added** `megatron_fsdp_max_pool_double_buffer`: `bool = False`" in out
    assert "**new `__post_init__` coercion** of `fsdp_double_buffer`" in out
    assert "max-pool-double-buffer-forces-double-buffer" in out
    assert "**default changed** `moe_deepep_num_sms` (TransformerConfig): `20` → `None`" in out
    data = json.loads(run_cli("megatron-core==0.19.2", "--against", "0.18.2", "--json").stdout)
    assert data["verdict"] == "breaking" and data["exit_code"] == 1
    assert {c["config"] for c in data["changes"]["breaking"]} == {"TransformerConfig"}
    assert [c["field"] for c in data["changes"]["needs a decision"] if c["config"] ==
            "DistributedDataParallelConfig"] == ["megatron_fsdp_max_pool_double_buffer", "fsdp_double_buffer"]


@network
def test_identical_to_newest_registry_entry_exits_0():
    proc = run_cli("megatron-core==0.19.2", "--against", "0.19.2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "COMPATIBLE" in proc.stdout and "0 breaking, 0 needing a decision, 0 informational" in proc.stdout


@network
def test_a_registry_release_is_compared_with_the_pin_before_it():
    # `gate 0.19.2` (a bare version) on a fresh clone: 0.19.2 is in the registry, so comparing it with itself says
    # nothing; the matrix tools' gate compares it with matrix.yaml's pin before it and says so at the top
    proc = run_cli("0.19.2", matrix_tools=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "# Upgrade gate: megatron-core 0.19.2 vs registry 0.18.2: BREAKING"
    assert lines[2].startswith("- 0.19.2 is already in the registry (same config); compared with 0.18.2, the pin "
                               "before it in matrix.yaml")
    assert "## Install" in lines and "plain install of `megatron-core==0.18.2`" in proc.stdout
    # the package's own gate knows no matrix.yaml: it applies the matrix's rule (one pin per minor series) to the
    # registry, so the README's `python -m compat gate latest` says something on day one too
    alone = run_cli("0.19.2")
    assert alone.stdout.splitlines()[0] == "# Upgrade gate: megatron-core 0.19.2 vs registry 0.18.2: BREAKING"
    assert "the newest release of the minor series before it" in alone.stdout.splitlines()[2]


# ------------------------------------------------------------------------------------ synthetic candidates
@network
def test_flipped_grad_reduce_default_fails_and_names_it(tmp_path):
    text = real_config_text("0.19.2")
    assert text.count("grad_reduce_in_fp32: bool = False") == 1
    wheel = make_wheel(tmp_path / "megatron_core-0.19.2-py3-none-any.whl",
                       text.replace("grad_reduce_in_fp32: bool = False", "grad_reduce_in_fp32: bool = True"),
                       others=real_config_files("0.19.2"))
    proc = run_cli(str(wheel))
    assert proc.returncode == 1, proc.stderr
    assert "**default changed** `grad_reduce_in_fp32`: `False` → `True`" in proc.stdout
    assert "BREAKING" in proc.stdout.splitlines()[0]
    data = json.loads(run_cli(str(wheel), "--json").stdout)
    assert [(c["what"], c["field"]) for c in data["changes"]["breaking"]] == [("default", "grad_reduce_in_fp32")]


def test_annotation_spelling_is_not_a_type_change():
    assert g.type_key("Optional[int]") == g.type_key("int | None") == g.type_key("typing.Union[None, int]")
    assert g.type_key("Tuple[str, ...]") == g.type_key("tuple[str, ...]")
    assert g.type_key("Optional[int]") != g.type_key("int")


def test_shim_fields_come_from_the_data():
    pinned = g.shim_fields(load_json("renames.json")["renames"], load_json("rules.json"))
    rules = load_json("rules.json")
    expected = ({r["old"] for r in load_json("renames.json")["renames"]} | {r["new"] for r in load_json(
        "renames.json")["renames"]} | set(rules["resolver_sets"]) | set(rules["value_rules"])
        | {n for c in rules["constraints"] for n in [*c["reads"], *c.get("sets", {})]})
    assert set(pinned) == expected and "preserve_fp32_weights" in pinned and "bucket_size" in pinned


# ------------------------------------------------------------------------------------ unreadable candidates
def test_corrupt_zip(tmp_path):
    bad = tmp_path / "megatron_core-9.9.9-py3-none-any.whl"
    bad.write_bytes(b"PK\x03\x04 this is not a zip archive")
    assert_clean_failure(run_cli(str(bad)), bad.name)


def test_zip_with_a_corrupt_member(tmp_path):
    text = "from dataclasses import dataclass\n@dataclass\nclass DistributedDataParallelConfig:\n" + \
        "    x: bool = False\n" * 200
    raw = bytearray(make_wheel(tmp_path / "w.whl", text).read_bytes())
    start = raw.index(DDP_PATH.encode()) + len(DDP_PATH) + 10
    raw[start:start + 40] = b"\xff" * 40  # damage the deflated member data
    bad = tmp_path / "megatron_core-0.19.2-py3-none-any.whl"
    bad.write_bytes(bytes(raw))
    assert_clean_failure(run_cli(str(bad)))


def test_corrupt_sdist_gives_one_line(tmp_path):
    bad = tmp_path / "megatron_core-9.9.9.tar.gz"
    bad.write_bytes(os.urandom(64))
    assert_clean_failure(run_cli(str(bad)), "not a readable wheel or sdist")


def test_archive_without_the_config_file(tmp_path):
    wheel = make_wheel(tmp_path / "megatron_core-0.19.2-py3-none-any.whl", None)
    assert_clean_failure(run_cli(str(wheel)), "has no megatron/core/distributed/distributed_data_parallel_config.py")


def test_source_tree_that_does_not_exist(tmp_path):
    assert_clean_failure(run_cli(str(tmp_path / "Megatron-LM")), "does not exist")


@pytest.mark.parametrize("candidate", ["megatron-core==0.20.0", "latest"])
def test_unreachable_index(tmp_path, candidate):
    env = {"MCORE_COMPAT_INDEX_URL": "http://127.0.0.1:9/simple", "MCORE_COMPAT_CACHE": str(tmp_path / "cache")}
    assert_clean_failure(run_cli(candidate, env=env), "127.0.0.1:9")


def test_usage_errors_exit_2(tmp_path):
    assert run_cli("megatron-core>=0.18").returncode == 2
    wheel = make_wheel(tmp_path / "x.whl", None)
    proc = run_cli(str(wheel), "--against", "0.13.7")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------------ nothing is executed
MALICIOUS = "import pathlib\npathlib.Path({marker!r}).write_text('executed')\n"


@network
@pytest.mark.parametrize("kind", ["wheel", "sdist", "tree"])
def test_candidate_code_never_runs(tmp_path, kind):
    marker = tmp_path / "pwned"
    payload = MALICIOUS.format(marker=str(marker))
    text = payload + real_config_text("0.19.2")
    files = {DDP_PATH: text, **{path: payload + body for path, body in real_config_files("0.19.2").items()},
             "megatron/__init__.py": payload, "megatron/core/__init__.py": payload,
             "megatron/core/distributed/__init__.py": payload, "setup.py": payload,
             "megatron/core/package_info.py": payload + "MAJOR = 0\nMINOR = 19\nPATCH = 2\nPRE_RELEASE = ''\n"}
    src = tmp_path / "src"
    src.mkdir()
    if kind == "wheel":
        candidate = make_wheel(src / "megatron_core-0.19.2-py3-none-any.whl", text)
        with zipfile.ZipFile(candidate, "a") as z:
            for name, body in files.items():
                if name != DDP_PATH:
                    z.writestr(name, body)
    elif kind == "sdist":
        candidate = src / "megatron_core-0.19.2.tar.gz"
        with tarfile.open(candidate, "w:gz") as tar:
            pkg_info = "Metadata-Version: 2.1\nName: megatron-core\nVersion: 0.19.2\n"
            for name, body in {**files, "PKG-INFO": pkg_info}.items():
                info = tarfile.TarInfo(f"megatron_core-0.19.2/{name}")
                info.size = len(body.encode())
                tar.addfile(info, io.BytesIO(body.encode()))
    else:
        candidate = src / "Megatron-LM"
        for name, body in files.items():
            (candidate / name).parent.mkdir(parents=True, exist_ok=True)
            (candidate / name).write_text(body)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    proc = run_cli(str(candidate), "--against", "0.19.2", env={"TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stdout + proc.stderr  # same fields as 0.19.2: compatible
    assert "megatron-core 0.19.2" in proc.stdout
    assert not marker.exists()
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p != scratch)
    assert after == before and not any(scratch.iterdir())  # nothing extracted to disk


# ------------------------------------------------------------------------------------ --accept
MATRIX = """pins:
  - version: "0.18.2"
    python: "3.11"
    torch: "2.13.0+cpu"
    no_deps: true
    ignore_requires_python: true
    extra: [numpy, packaging]
    note: "test pin"
"""


@network
@pytest.mark.slow
def test_accept_writes_registry_and_pin(tmp_path):
    pytest.importorskip("yaml")
    full = registry().data
    reg_path, matrix_path = tmp_path / "registry.json", tmp_path / "matrix.yaml"
    reg_path.write_text(refresh.dumps(registry().truncated("0.18.2").data))
    matrix_path.write_text(MATRIX)
    proc = run_cli("megatron-core==0.19.2", "--registry", str(reg_path), "--matrix", str(matrix_path), "--accept")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "## Accepted" in proc.stdout

    keep = [r["version"] for r in full["releases"] if not _v.is_newer(r["version"], "0.18.2") or
            r["version"] == "0.19.2"]
    expected = registry_format.subset(full, keep)
    assert reg_path.read_text() == refresh.dumps(expected)  # same deterministic format as refresh
    assert 'version: "0.19.2"' in matrix_path.read_text()

    again = run_cli("megatron-core==0.19.2", "--registry", str(reg_path), "--against", "0.19.2")
    assert again.returncode == 0 and "vs registry 0.19.2" in again.stdout
    # without --against, a registry release is compared with the pin before it (matrix.yaml's 0.18.2)
    before = run_cli("megatron-core==0.19.2", "--registry", str(reg_path), "--matrix", str(matrix_path))
    assert "0.19.2 is already in the registry (same config); compared with 0.18.2" in before.stdout


# ------------------------------------------------------------------------------------ downloading (tests/unit/test_fetch.py)
@network
def test_latest_is_the_newest_final_release_on_the_index():
    newest = _v.newest([v for v, yanked in refresh.list_releases().items() if not yanked])
    proc = run_cli("latest", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["candidate"] == newest
