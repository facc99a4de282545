"""compat.tooling.host_matrix: the pins a host reads (the packaged copy equals matrix.yaml), their install recipes,
the uv/pip commands built from them, and install_pin as a host's noxfile calls it (and ours does)."""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from compat.tooling import host_matrix as hm

ROOT = Path(__file__).resolve().parents[2]
NO_INDEX: list[str] = []


def _doc(**pin):
    base = {"version": "0.19.2", "python": "3.11", "torch": "2.13.0+cpu"}
    return {"pins": [{**base, **pin}]}


def test_packaged_pins_are_matrix_yaml():
    from tools.matrix import DEFAULT_PINS_JSON, load_matrix, pins_json_text

    pins = load_matrix(ROOT / "matrix.yaml")
    assert DEFAULT_PINS_JSON.read_text(encoding="utf-8") == pins_json_text(pins), \
        "compat/tooling/data/pins.json is stale: run python tools/matrix.py --write-pins-json"
    loaded = hm.load_pins()
    assert [p.version for p in loaded] == [p.version for p in pins]
    for mine, ours in zip(loaded, pins):
        for key in hm.FIELDS:
            assert getattr(mine, key) == getattr(ours, key), (mine.version, key)


def test_host_copy_json_and_yaml(tmp_path):
    doc = _doc(no_deps=True, extra=["numpy"], note="x")
    (tmp_path / "m.json").write_text(json.dumps(doc))
    (tmp_path / "m.yaml").write_text("pins:\n  - version: '0.19.2'\n    python: '3.11'\n    torch: 2.13.0+cpu\n"
                                     "    no_deps: true\n    extra: [numpy]\n    note: x\n")
    want = hm.HostPin("0.19.2", "3.11", "2.13.0+cpu", no_deps=True, extra=("numpy",), note="x")
    assert hm.load_pins(tmp_path / "m.json") == [want]
    assert hm.load_pins(tmp_path / "m.yaml") == [want]


def test_yaml_without_pyyaml_is_a_typed_error(tmp_path, monkeypatch):
    (tmp_path / "m.yaml").write_text("pins: []\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now raises ImportError
    with pytest.raises(hm.HostMatrixError, match="PyYAML is not installed") as exc:
        hm.load_pins(tmp_path / "m.yaml")
    assert exc.value.field == "path"


@pytest.mark.parametrize(("doc", "field", "value"), [
    (_doc(colour="red"), "colour", "red"),
    (_doc(python=3.11), "python", 3.11),
    (_doc(python="3"), "python", "3"),
    (_doc(version="latest"), "version", "latest"),
    (_doc(torch=""), "torch", ""),
    (_doc(extra="numpy"), "extra", "numpy"),
    (_doc(no_deps="yes"), "no_deps", "yes"),
    (_doc(ignore_requires_python=True), "ignore_requires_python", True),
    ({"pins": []}, "pins", []),
    ({"pins": [_doc()["pins"][0], _doc()["pins"][0]]}, "version", "0.19.2"),
])
def test_bad_pin_data_names_field_and_value(doc, field, value):
    with pytest.raises(hm.HostMatrixError) as exc:
        hm.pins_from_data(doc)
    assert (exc.value.field, exc.value.value) == (field, value)
    assert "supported:" in str(exc.value) and field in str(exc.value)


def test_bad_path_and_unknown_version(tmp_path):
    with pytest.raises(hm.HostMatrixError, match=r"\.json file") as exc:
        hm.load_pins(tmp_path / "m.toml")
    assert exc.value.field == "path"
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(hm.HostMatrixError, match="valid JSON"):
        hm.load_pins(tmp_path / "bad.json")
    with pytest.raises(hm.HostMatrixError, match="0.7.0") as exc:
        hm.find_pin(hm.load_pins(), "0.99.0")
    assert exc.value.value == "0.99.0"


def test_plain_recipe_resolves_megatron_with_torch():
    pin = hm.find_pin(hm.load_pins(), "0.7.0")  # no_deps false: one resolve
    steps = hm.install_steps(pin, deps=["pytest"], index=NO_INDEX)
    assert [s.argv for s in steps] == [["uv", "pip", "install", "torch==2.13.0+cpu", "numpy", "packaging",
                                        "setuptools<81", "pytest", "megatron-core==0.7.0"]]


def test_no_deps_recipe_installs_megatron_alone():
    pin = hm.HostPin("0.10.0", "3.11", "2.13.0+cpu", no_deps=True, extra=("numpy",))
    steps = hm.install_steps(pin, torch="2.13.0+cu130", index=["--find-links", "/w"])
    assert [s.argv for s in steps] == [
        ["uv", "pip", "install", "--find-links", "/w", "torch==2.13.0+cu130", "numpy"],
        ["uv", "pip", "install", "--find-links", "/w", "--no-deps", "megatron-core==0.10.0"]]


def test_ignore_requires_python_goes_through_pip():
    pin = hm.find_pin(hm.load_pins(), "0.19.2")
    assert pin.ignore_requires_python and pin.no_deps
    steps = hm.install_steps(pin, index=NO_INDEX)
    assert steps[0].tool == "uv" and steps[0].args[-1] == "pip" and "megatron-core==0.19.2" not in steps[0].args
    assert steps[1].argv == ["python", "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
                             "--ignore-requires-python", "megatron-core==0.19.2"]


@pytest.mark.parametrize("torch", ["", ">=2.1", "2.13.0 +cpu"])
def test_bad_torch_override(torch):
    with pytest.raises(hm.HostMatrixError) as exc:
        hm.install_steps(hm.load_pins()[0], torch=torch, index=NO_INDEX)
    assert exc.value.field == "torch" and exc.value.value == torch


def test_pip_config_to_uv_arguments(tmp_path):
    lines = [f"global.find-links='{tmp_path} /not/here'", "global.index-url='https://a/simple'",
             "user.index-url='https://b/simple'", "global.extra-index-url='https://c/simple'",
             "install.constraint='/no/such/file'", "global.timeout='60'"]
    cfg = hm.parse_pip_config(lines)
    assert cfg == {"find-links": [str(tmp_path)], "index-url": ["https://b/simple"],
                   "extra-index-url": ["https://c/simple"], "constraint": []}
    assert hm.index_args(cfg) == ["--find-links", str(tmp_path), "--index-url", "https://b/simple",
                                  "--extra-index-url", "https://c/simple", "--index-strategy", "unsafe-best-match"]
    assert "--index-strategy" not in hm.index_args(cfg, uv=False)


class FakeSession:
    def __init__(self, backend="uv"):
        self.venv_backend, self.calls = backend, []

    def install(self, *args):
        self.calls.append(("install", args))

    def run_install(self, *args):
        self.calls.append(("run_install", args))


def test_install_pin_runs_the_steps_in_a_session(monkeypatch):
    monkeypatch.setattr(hm, "pip_config", lambda: {"extra-index-url": ["https://c/simple"]})
    pin = hm.find_pin(hm.load_pins(), "0.19.2")
    session = FakeSession()
    steps = hm.install_pin(session, pin, deps=["pytest"])
    assert session.calls[0] == ("install", steps[0].args) and "pytest" in steps[0].args
    assert "--index-strategy" in steps[0].args
    assert session.calls[1] == ("run_install", tuple(steps[1].argv))
    pip_session = FakeSession("virtualenv")  # pip backend: no uv-only flags
    hm.install_pin(pip_session, pin)
    assert "--index-strategy" not in pip_session.calls[0][1]


def test_our_noxfile_installs_through_the_helper():
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert not defined & {"pip_config", "_pip_config_lines"}, "the noxfile duplicates the helper"
    install = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "install_pin")
    calls = {ast.unparse(c.func) for c in ast.walk(install) if isinstance(c, ast.Call)}
    assert {"host_matrix.install_steps", "host_matrix.install_pin"} <= calls
    assert not any(isinstance(c, ast.Call) and ast.unparse(c.func) in ("uv_install", "session.run_install")
                   for c in ast.walk(install))


def test_recorded_downstream_run_is_on_our_pins_and_green_on_at_least_four():
    """benchmarks/results/downstream_matrix.md: every pin row is a pin of ours, at least 4 passed with no failures."""
    import re

    text = (ROOT / "benchmarks" / "results" / "downstream_matrix.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+\.\d+\.\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", text, re.MULTILINE)
    ours = {p.version for p in hm.load_pins()}
    assert rows and {v for v, *_ in rows} <= ours
    green = [v for v, passed, failed, errors, _ in rows if int(passed) > 0 and int(failed) == int(errors) == 0]
    assert len(green) >= 4, green
