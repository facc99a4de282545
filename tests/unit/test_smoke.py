"""The plain-install check's comparison (tools/smoke.py) and its data (compat/tooling/data/install.json)."""
from __future__ import annotations

import yaml

from tools import smoke

OK_IMPORTS = {m: "ok" for m in smoke.load()["modules"]}


def test_install_failures_are_classified():
    assert smoke.install_cause(0, "anything") == "ok"
    built = smoke.install_cause(1, "Preparing metadata (pyproject.toml): finished with status 'error'\n"
                                   "meson-python: error: The package requires Python version >=3.12, running on "
                                   "3.11.7\nerror: metadata-generation-failed\n╰─> numpy\n")
    assert built == "build failure: numpy (from source): requires Python version >=3.12, running on 3.11.7"
    unresolved = smoke.install_cause(1, "  × No solution found when resolving dependencies:\n  ╰─▶ Because "
                                        "tensorstore==0.1.45 has no wheels ...\n")
    assert unresolved.startswith("unresolvable requirement: × No solution found")


def test_outcome_keys_keep_the_cause_not_the_wording():
    assert smoke.outcome_key("undeclared import: numpy") == "undeclared import: numpy"
    assert smoke.outcome_key("import error: TypeError: x() got 1") == smoke.outcome_key("import error: TypeError: y")
    assert smoke.outcome_key("build failure: numpy (from source): a") == smoke.outcome_key(
        "build failure: numpy (from source): b") != smoke.outcome_key("build failure: scipy (from source): a")


def test_a_change_either_way_is_a_difference():
    recorded = {"override": None, "install": "ok", "imports": {**OK_IMPORTS, "megatron.core": "undeclared import: "
                                                                                           "numpy"}}
    assert smoke.differences(recorded, recorded) == []
    fixed = {**recorded, "imports": OK_IMPORTS}  # numpy now declared: the record is stale
    assert smoke.differences(recorded, fixed) == ["import megatron.core: recorded 'undeclared import: numpy', now 'ok'"]
    broken = {**recorded, "install": "unresolvable requirement: x"}
    assert smoke.differences(recorded, broken)[0].startswith("install: recorded 'ok'")
    assert smoke.differences(None, recorded) == ["no recorded outcome for this pin (run with --record)"]


def test_requires_python_override_is_needed_only_where_it_excludes_the_python():
    assert smoke.python_excluded(">=3.12", "3.11") and not smoke.python_excluded(">=3.10", "3.11")
    assert not smoke.python_excluded(None, "3.11")


def test_every_pin_has_a_recorded_outcome():
    pins = [p["version"] for p in yaml.safe_load((smoke.ROOT / "matrix.yaml").read_text())["pins"]]
    recorded = smoke.load()["pins"]
    assert sorted(recorded) == sorted(pins)
    for version in pins:
        rec = recorded[version]
        assert rec["install"] == "ok" or rec["install"].split(":")[0] in (
            "unresolvable requirement", "build failure", "install failure"), version
        assert rec["install"] != "ok" or set(rec["imports"]) == set(OK_IMPORTS), version
