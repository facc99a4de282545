"""Gate verdicts a maintainer can act on: levels, package metadata, labels, value renames, every class of
CONFIGS, missing classes, rendering, upstream commits. Candidates are built here from the registry's own facts."""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import hostile_inputs as H
import pytest

from compat.configs import TRANSFORMER_PATH
from compat.registry import load_json, registry
from compat.registry_format import decode_snapshot
from compat.tooling import gate as g
from compat.tooling.data_files import load_json as tooling_json
from compat.tooling.extract import DDP_PATH
from compat.tooling.gate import aliases, candidate, label, metadata
from compat.tooling.gate.levels import NARROWED, UNKNOWN, WIDENED, annotation_fit
from compat.tooling.text import md_prose

REG = registry()


def facts_of(version: str, *, claims: str | None = None, drop=()) -> dict:
    """The extracted facts a wheel of ``version`` gives (from the registry), claiming ``claims``."""
    out = {"version": claims or version, "kind": "wheel", "requires_python": REG.releases[version]["requires_python"]}
    for key, ref in REG.releases[version]["configs"].items():
        if key not in drop:
            out[key] = {"sha256": "0" * 64, **copy.deepcopy(decode_snapshot(REG.data, ref))}
    return out


def field_of(facts: dict, key: str, name: str) -> dict:
    return next(f for f in facts[key]["fields"] if f["name"] == name)


def only(report, what: str, field: str, config: str | None = None):
    found = [c for c in report.changes if c.what == what and c.field == field and (config is None or c.config == config)]
    assert len(found) == 1, [(c.level, c.config, c.what, c.field) for c in report.changes if c.field == field]
    return found[0]


# ------------------------------------------------------------------------------------------------- levels
@pytest.mark.parametrize("old, new, verdict", [
    ("Literal['softmax', 'sigmoid']", "Literal['softmax', 'sigmoid', 'sqrtsoftplus']", WIDENED),
    ("int", "Optional[int]", WIDENED),
    ("Optional[Literal['gated_delta_net', 'dsa']]", "Optional[Literal['gdn', 'dsa', 'gated_delta_net']]", WIDENED),
    ("int", "float", WIDENED),
    ("Literal['a', 'b']", "Literal['a']", NARROWED),
    ("Optional[int]", "int", NARROWED),
    ("float", "int", NARROWED),
    ("Foo", "Bar", UNKNOWN),
])
def test_annotation_fit(old, new, verdict):
    assert annotation_fit(old, new).verdict == verdict


def test_widened_annotation_is_a_decision_and_narrowed_is_breaking():
    facts = facts_of("0.19.2")
    field_of(facts, "transformer", "moe_router_score_function")["annotation"] = \
        "Literal['softmax', 'sigmoid', 'sqrtsoftplus', 'relu']"  # 0.19.2: the first three
    field_of(facts, "transformer", "moe_deepep_num_sms")["annotation"] = "int"  # 0.19.2 has Optional[int]
    report = g.compare(facts, REG, "0.19.2")
    wide = only(report, "annotation", "moe_router_score_function", "TransformerConfig")
    assert wide.level == g.DECISION and "every old value still fits" in wide.shim and "('relu')" in wide.shim
    assert "until --accept" in wide.shim
    narrow = only(report, "annotation", "moe_deepep_num_sms", "TransformerConfig")
    assert narrow.level == g.BREAKING and "None" in narrow.shim and "no longer fit" in narrow.shim


def test_every_default_change_is_breaking_with_the_kwargs_that_keep_it():
    facts = facts_of("0.19.2")
    field_of(facts, "optimizer", "muon_tp_mode")["default"] = "duplicated"  # not read by the shim
    report = g.compare(facts, REG, "0.19.2")
    c = only(report, "default", "muon_tp_mode", "OptimizerConfig")
    assert c.level == g.BREAKING and report.verdict == "breaking"
    assert c.kwargs == {"muon_tp_mode": "blockwise"}
    assert "leave muon_tp_mode unset now get 'duplicated' instead of 'blockwise'" in c.shim
    assert any("every OptimizerConfig built without muon_tp_mode" in n for n in c.notes)
    assert '"muon_tp_mode": "blockwise"' in report.to_markdown()


def _ddp_with_new_check(when: str, reads: tuple[str, ...]) -> dict:
    facts = facts_of("0.16.1")
    ddp = facts["ddp"]
    ddp["fields"].append({"name": "cache_views", "annotation": "bool", "default": False, "doc": "", "owner":
                          "DistributedDataParallelConfig"})
    ddp["post_init"]["reads"] = sorted(set(ddp["post_init"]["reads"]) | set(reads))
    ddp["post_init"]["checks"].append({"kind": "assert", "exception": "AssertionError", "when": [when],
                                       "test": "self.use_distributed_optimizer", "message": None, "reads": list(reads),
                                       "skip": None, "line": 999, "owner": "DistributedDataParallelConfig"})
    return facts


def test_a_check_that_needs_a_new_default_off_field_is_a_decision_at_most():
    schema = REG.schema("0.16.1", config="ddp")
    resolver_set = next(n for n in load_json("rules.json")["resolver_sets"] if n in schema
                        and n not in schema.post_init_reads)
    gated = g.compare(_ddp_with_new_check("self.cache_views", ("cache_views", resolver_set)), REG, "0.16.1")
    c = only(gated, "check", resolver_set)
    assert c.level == g.DECISION and any("fires only when cache_views" in n for n in c.notes)
    ungated = g.compare(_ddp_with_new_check(f"self.{resolver_set}", (resolver_set,)), REG, "0.16.1")
    assert only(ungated, "check", resolver_set).level == g.BREAKING  # an existing config can trip it


# ---------------------------------------------------------------------------------------------- every class
def test_adam_and_sgd_are_diffed_like_every_class():
    facts = facts_of("0.16.1")
    adam = facts["adam_optimizer"]
    own = next(f for f in adam["fields"] if f["owner"] == "AdamOptimizerConfig" and isinstance(f.get("default"), float))
    own["default"] = own["default"] * 2
    report = g.compare(facts, REG, "0.16.1")
    c = only(report, "default", own["name"], "AdamOptimizerConfig")
    assert c.level == g.BREAKING and c.kwargs
    # its inherited OptimizerConfig fields are diffed once, under OptimizerConfig
    assert not [x for x in report.changes if x.config == "SGDOptimizerConfig"]


def test_optimizer_post_init_checks_are_diffed():
    facts = facts_of("0.19.2")
    opt = facts["optimizer"]
    opt["post_init"]["reads"] = sorted(set(opt["post_init"]["reads"]) | {"lr"})
    report = g.compare(facts, REG, "0.19.2")
    assert only(report, "check", "lr", "OptimizerConfig").level in (g.DECISION, g.BREAKING)


@pytest.mark.parametrize("key, cls", [("transformer", "TransformerConfig"), ("mla", "MLATransformerConfig"),
                                      ("optimizer", "OptimizerConfig"), ("adam_optimizer", "AdamOptimizerConfig")])
def test_a_class_the_compared_release_has_and_the_candidate_lacks_is_breaking(key, cls):
    against = "0.16.1"
    report = g.compare(facts_of(against, drop=(key,)), REG, against)
    c = only(report, "missing", cls)
    assert c.level == g.BREAKING and report.verdict == "breaking"


def test_accept_refuses_a_candidate_without_transformer_config(tmp_path):
    wheel = H.wheel(tmp_path / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0",
                    members={TRANSFORMER_PATH: "class Renamed:\n    pass\n"})
    reg_copy = tmp_path / "registry.json"
    shutil.copyfile(H.ROOT / "compat" / "data" / "registry.json", reg_copy)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text('pins:\n  - version: "0.19.2"\n    python: "3.12"\n    torch: "2.13.0+cpu"\n')
    before = reg_copy.read_bytes(), matrix.read_bytes()
    run = H.call_cli(["gate", str(wheel), "--registry", str(reg_copy), "--matrix", str(matrix), "--accept"])
    assert run.returncode == 3 and "lacks TransformerConfig" in run.stderr and "MLATransformerConfig" in run.stderr
    assert (reg_copy.read_bytes(), matrix.read_bytes()) == before


# ------------------------------------------------------------------------------------------------ metadata
def test_requires_python_narrowing_is_breaking_for_the_pythons_it_drops():
    c = metadata.python_change(">=3.10", ">=3.12")
    assert c.level == g.BREAKING and "3.10, 3.11" in c.shim
    assert metadata.python_change(">=3.12", ">=3.10").level == g.INFO
    assert metadata.python_change(">=3.10", ">=3.10") is None


def test_dependency_changes_have_levels():
    old = ["torch", "numpy<2.0.0", 'einops; extra == "dev"', 'tensorstore~=0.1; extra == "dev"']
    new = ["torch>=2.6.0", "numpy", "packaging>=24.2", 'tensorstore~=0.2; extra == "dev"',
           'mamba-ssm; extra == "ssm"']
    got = {(c.what, c.field): c for c in metadata.dependency_changes(old, new)}
    assert got[("dependency bound", "torch")].level == g.BREAKING  # a raised floor
    assert got[("dependency bound", "numpy")].level == g.INFO  # a bound dropped: everything allowed still is
    assert got[("dependency added", "packaging")].level == g.DECISION
    assert got[("dependency bound", "tensorstore")].level == g.DECISION  # an extra narrowed
    assert got[("dependency removed", "einops")].level == g.INFO
    assert got[("dependency added", "mamba-ssm")].level == g.INFO and "[ssm]" in got[("dependency added",
                                                                                        "mamba-ssm")].shim


def test_the_wheel_metadata_is_read_and_diffed_against_metadata_json(tmp_path):
    reqs = "".join(f"Requires-Dist: {r}\n" for r in tooling_json("metadata.json")["releases"]["0.19.2"]["requires_dist"])
    meta = H.metadata("0.20.0", requires_python=">=3.13", extra=reqs.replace("torch>=2.6.0", "torch>=2.9.0"))
    report = g.gate(H.wheel(tmp_path / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0", meta=meta), REG,
                    "0.19.2")
    rp = only(report, "requires-python", "Requires-Python")
    assert rp.level == g.BREAKING and "3.12" in rp.shim
    torch = only(report, "dependency bound", "torch")
    assert torch.level == g.BREAKING and (torch.old, torch.new) == ("torch>=2.6.0", "torch>=2.9.0")
    assert [c for c in report.changes if c.config == "(package)"] == [rp, torch]
    assert "**Requires-Python changed**: `>=3.12` → `>=3.13`" in report.to_markdown()


def test_a_checkout_reads_its_pyproject():
    raw = b'[project]\nrequires-python = ">=3.12"\ndependencies = ["torch>=2.6.0"]\n' \
          b'[project.optional-dependencies]\nte = ["transformer-engine"]\n'
    got = metadata._from_pyproject(raw)
    assert got == {"requires_python": ">=3.12", "requires_dist": ["torch>=2.6.0", 'transformer-engine; extra == "te"']}


# --------------------------------------------------------------------------------------------------- labels
def test_a_wheel_claiming_a_registry_version_with_other_config_is_told_at_the_top(tmp_path):
    wheel = H.wheel(tmp_path / "megatron_core-0.13.1-py3-none-any.whl", version="0.13.1", base="0.19.2")
    report = g.gate(wheel, REG)  # against the newest: its config is 0.19.2's
    assert report.against == "0.19.2" and report.verdict != "compatible" and report.exit_code == 1
    assert report.label["claims"] == "0.13.1" and report.label["differs"]
    c = only(report, "label", "(version)")
    assert c.level == g.DECISION and "differs from the registry's 0.13.1" in c.shim
    lines = report.to_markdown().splitlines()
    assert lines[2].startswith("- **this build says it is 0.13.1, but its config differs from the registry's 0.13.1**")


def test_a_checkout_saying_a_release_it_is_not(tmp_path):
    # a `dev` checkout whose package_info.py says 0.18.0 but whose config is 0.19.2's
    tree = H.tree(tmp_path / "Megatron-LM", version="0.18.0", base="0.19.2")
    report = g.gate(tree, REG, "0.19.2")
    assert report.label["claims"] == "0.18.0" and report.label["differs"]
    assert "this build says it is 0.18.0, but its config differs from the registry's 0.18.0" in report.to_markdown()
    assert only(report, "label", "(version)").notes  # what differs, by name


def H_matrix():
    from tools import matrix

    return matrix


def test_a_registry_release_is_compared_with_the_pin_before_it(tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("pins:\n" + "".join(f'  - version: "{v}"\n    python: "3.11"\n    torch: "2.13.0+cpu"\n'
                                          for v in ("0.16.1", "0.18.2", "0.19.2")))
    pinned = H_matrix().MatrixTools.pinned(matrix, None)
    assert pinned == ["0.16.1", "0.18.2", "0.19.2"]
    assert label.previous_pin("0.19.2", pinned) == "0.18.2" and label.previous_pin("0.16.1", pinned) is None
    wheel = H.wheel(tmp_path / "megatron_core-0.19.2-py3-none-any.whl", version="0.19.2")
    report = g.gate(wheel, REG, pinned=pinned)
    assert report.against == "0.18.2" and "0.19.2 is already in the registry" in report.baseline
    assert g.gate(wheel, REG, "0.19.2", pinned=pinned).against == "0.19.2"  # --against wins
    # the package alone (no matrix tools) applies matrix.yaml's rule to the registry: one pin per minor series
    alone = g.gate(wheel, REG)
    assert alone.against == "0.18.2" and "the minor series before it" in alone.baseline
    releases = ["0.16.0", "0.16.1", "0.18.0", "0.18.2", "0.19.0", "0.19.1", "0.19.2"]
    assert label.previous_pin("0.19.1", None, releases) == "0.18.2"  # not 0.19.0: a patch of the same series
    assert label.previous_pin("0.18.0", None, releases) == "0.16.1" and label.previous_pin("0.16.0", None, releases) is None


# -------------------------------------------------------------------------------------------- value renames
_POST_INIT = '''
    def __post_init__(self):
        if self.experimental_attention_variant == "gated_delta_net":
            self.experimental_attention_variant = "gdn"
'''
_HELPER = '''
    def __post_init__(self):
        from megatron.core.models.gpt.specs import normalize
        self.experimental_attention_variant = normalize(self.experimental_attention_variant)
'''


@pytest.mark.parametrize("body, helper", [(_POST_INIT, None),
                                         (_HELPER, '_ALIASES = {"gated_delta_net": "gdn"}\n\n'
                                                   'def normalize(v):\n    return _ALIASES.get(v, v)\n')])
def test_a_value_rewritten_after_construction_is_a_value_rename(tmp_path, monkeypatch, body, helper):
    tree = H.tree(tmp_path / "Megatron-LM", version="0.20.0")
    path = tree / TRANSFORMER_PATH
    text = path.read_text().replace("class TransformerConfig:",
                                    "class TransformerConfig:" + body, 1)
    path.write_text(text)
    if helper:
        (tree / "megatron/core/models/gpt").mkdir(parents=True)
        (tree / "megatron/core/models/gpt/specs.py").write_text(helper)
    found = aliases.value_rewrites(tree)
    assert [(r["field"], r["old"], r["new"]) for r in found] == [("experimental_attention_variant", "gated_delta_net",
                                                                  "gdn")]
    monkeypatch.setattr(aliases, "load_json", lambda name: (_ for _ in ()).throw(FileNotFoundError(name)))
    report = g.gate(tree, REG, "0.19.2")
    c = only(report, "value rename", "experimental_attention_variant")
    assert c.level == g.DECISION and "does not exist" in c.shim and (c.old, c.new) == ("'gated_delta_net'", "'gdn'")
    data = {"format": 1, "aliases": [{"config": "transformer", "field": "experimental_attention_variant",
                                      "old": "gated_delta_net", "new": "gdn", "since": "0.20.0", "evidence": "x:1"}]}
    monkeypatch.setattr(aliases, "load_json", lambda name: data)
    known = only(g.gate(tree, REG, "0.19.2"), "value rename", "experimental_attention_variant")
    assert known.level == g.INFO and "already maps" in known.shim


# ------------------------------------------------------------------------------------------------ rendering
def test_dunder_names_are_code_spans():
    assert md_prose("new in this __post_init__: reads a_b") == "new in this `__post_init__`: reads a_b"
    assert "\\_\\_post" not in md_prose("__post_init__ reads it")


def test_a_bare_version_names_that_release(monkeypatch, tmp_path):
    monkeypatch.setattr(candidate, "fetch_release", lambda version, dest=None: Path(f"/fetched/{version}"))
    assert candidate.locate("0.19.2") == (Path("/fetched/0.19.2"), None)
    (tmp_path / "0.19.2").mkdir()
    monkeypatch.chdir(tmp_path)
    assert candidate.locate("0.19.2") == (Path("0.19.2"), False)  # an existing path of that name is the path


# -------------------------------------------------------------------------------------------- git checkouts
def _git(tree: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(tree), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_checkout_change_names_the_commit_that_made_it(tmp_path):
    tree = H.tree(tmp_path / "Megatron-LM", version="0.20.0")
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "import")
    ddp = tree / DDP_PATH
    ddp.write_text(ddp.read_text().replace("grad_reduce_in_fp32: bool = False", "grad_reduce_in_fp32: bool = True"))
    _git(tree, "commit", "-qam", "Flip grad_reduce_in_fp32 (#1234)")
    sha = _git(tree, "rev-parse", "HEAD").strip()
    marker = tmp_path / "ran"  # the checkout's own git config must not run anything
    _git(tree, "config", "core.fsmonitor", f"touch {marker}; false")
    (tree / ".gitattributes").write_text("*.py diff=evil\n")
    _git(tree, "config", "diff.evil.textconv", f"touch {marker}; cat")
    report = g.gate(tree, REG, "0.19.2")
    assert not marker.exists()
    c = only(report, "default", "grad_reduce_in_fp32", "DistributedDataParallelConfig")
    assert c.commit == f"{sha[:12]} Flip grad_reduce_in_fp32 (#1234)"
    assert f"upstream commit: `{sha[:12]} Flip grad_reduce_in_fp32 (#1234)`" in report.to_markdown()
    assert report.sections["checkout"]["head"] == sha
    assert json.loads(json.dumps(report.to_dict(), default=str))["changes"]["breaking"][0]["commit"] == c.commit


@pytest.mark.parametrize("name, data", [("install.json", {"format": 1, "pins": {"0.19.2": "x"}}),
                                        ("install.json", {"format": 1, "pins": ["0.19.2"]}),
                                        ("metadata.json", {"format": 1, "releases": {"0.19.2": ["torch"]}}),
                                        ("metadata.json", {"releases": {"0.19.2": {"requires_dist": "torch"}}})])
def test_malformed_gate_data_leaves_its_part_out(tmp_path, monkeypatch, name, data):
    import compat.tooling.gate.sections as sections

    real = tooling_json

    def fake(file):
        return data if file == name else real(file)

    monkeypatch.setattr(sections, "load_json", fake)
    monkeypatch.setattr(metadata, "load_json", fake)
    report = g.gate(H.wheel(tmp_path / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0"), REG, "0.19.2")
    text = report.to_markdown()
    assert ("## Install" not in text) if name == "install.json" else ("metadata.json has no entry" in text)


def test_the_shims_own_alias_data_is_read_with_list_values():
    """compat/data/value_aliases.json holds list values ('full' -> [] for cuda_graph_modules): the reader keys them."""
    known, why_none = aliases.shim_aliases()
    assert why_none is None and any(isinstance(a["new"], list) for a in known)
    rewrite = {"config": "transformer", "field": "cuda_graph_modules", "old": "full", "new": [], "evidence": "x:1"}
    changes = aliases.alias_changes([rewrite], {"transformer": REG.schema("0.17.1", config="transformer")})
    assert [(c.what, c.level) for c in changes] == [("value rename", g.INFO)] and "already maps" in changes[0].shim
