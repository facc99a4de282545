"""tools/field_reads.py classifies how a release's code reads a config field (the evidence behind
compat/data/type_acceptances.json), on small sources built here; and the committed acceptances are well formed."""
import json
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from tools.field_reads import SAFE_FOR_NONE, Package, field_reads  # noqa: E402

CONFIG = "megatron/core/transformer/transformer_config.py"
SOURCE = '''
class Layer:
    def __init__(self, config, use_cpu_initialization=False):
        if config.flag:                      # truthy
            pass
        x = 1 if not config.flag else 2      # truthy
        if config.rank is None:              # is_none
            pass
        else:
            y = config.rank * 2              # guarded (else of is None)
        if config.backend == "deepep":       # eq
            pass
        z = config.size * 2                  # other
        build(cpu=config.flag)               # passed to a parameter read by truthiness below
        helper(config.flag)                  # positional to a module-level function
        device = "cpu" if use_cpu_initialization else "cuda"

def build(cpu=False):
    return "cpu" if cpu else "cuda"

def helper(on):
    return on + 1                            # other: read arithmetically

class Fused:
    def __init__(self, config):
        assert config.rank is not None
        self.w = config.rank + 1             # guarded by the assert before it
    def forward(self, config):
        return config.rank * 3               # guarded: the class asserts it in __init__

def late(config):
    if config.rank is None:
        raise ValueError("needs rank")
    return config.rank + 1                   # guarded: the branch before raises
'''


@pytest.fixture(scope="module")
def reads(tmp_path_factory):
    wheel = tmp_path_factory.mktemp("w") / "fake.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("megatron/core/layer.py", SOURCE)
        zf.writestr(CONFIG, "class TransformerConfig:\n    pass\n")
    return field_reads(Package(str(wheel)), {"flag", "rank", "backend", "size"}, {CONFIG})


def _kinds(reads, name):
    return sorted(r.kind for r in reads[name])


def test_truthiness_and_pass_through(reads):
    kinds = _kinds(reads, "flag")
    assert kinds.count("truthy") >= 3 and "passed" in kinds
    assert "other" in kinds  # helper(config.flag) reaches `on + 1`


def test_none_checks_and_guards(reads):
    kinds = _kinds(reads, "rank")
    assert kinds.count("is_none") == 3 and kinds.count("guarded") == 4 and "other" not in kinds
    assert set(kinds) <= SAFE_FOR_NONE


def test_eq_and_arithmetic(reads):
    assert _kinds(reads, "backend") == ["eq"]
    assert _kinds(reads, "size") == ["other"]


def test_committed_acceptances_are_well_formed():
    from compat.registry import registry

    reg = registry()
    data = json.loads((ROOT / "compat" / "data" / "type_acceptances.json").read_text())
    assert data["format"] == 1 and data["acceptances"]
    for row in data["acceptances"]:
        assert row["shape"] in data["shapes"]
        assert row["releases"] and all(v in reg.releases for v in row["releases"])
        assert all(row["field"] in reg.schema(v, config=row["config"]) for v in row["releases"])
        ev = row["evidence"]
        assert ev["release"] == row["releases"][-1] and ev["reads"] and all(":" in e for e in ev["examples"])
        if row["shape"] == "none":
            assert set(ev["reads"]) <= SAFE_FOR_NONE


def test_value_aliases_are_well_formed():
    data = json.loads((ROOT / "compat" / "data" / "value_aliases.json").read_text())
    assert data["format"] == 1
    for row in data["aliases"]:
        assert {"config", "field", "old", "new", "since", "evidence"} <= set(row) and row["old"] != row["new"]
