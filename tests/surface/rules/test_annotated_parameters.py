"""Parameters annotated with a class (recall case swift_legacy_grouped_gemm): ``Optional[X]``,
``X | None``, ``Union[X, None]`` and ``"X"`` (compat.annotations reads them) type a parameter as ``X`` does (a
project subclass of a megatron class: its members; a megatron class: calls of the members it has); a Union with a
member that is no megatron class is not typed. A project class that sets attributes by computed name may set the
member read: the finding is guarded. A member a parameter annotated with a megatron class lacks is missing only
where no subclass (candidate or project) nor any store of that name in the project can supply it, and the
release before the candidate had it."""
from __future__ import annotations

from pathlib import Path

import pytest

from compat.tooling import refresh
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import SUBCLASS_CONFIG as CONFIG
from ..builders import SUBCLASS_MODEL_CONFIG as MODEL_CONFIG
from ..builders import make_project, make_wheel, subclass_releases
from ..builders import subclass_findings as findings


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """SUBCLASS_CONFIG's releases 0.3.0 and 0.4.0 (builders.py)."""
    return subclass_releases(tmp_path, monkeypatch)

BUILD = """
    from typing import Optional, Union
    import typing
    from megatron.core.transformer_config import TransformerConfig
    from proj.model_config import ModelConfig
    def build(config: {annotation}, other: {megatron}):
        return config.legacy_gemm, other.describe(quiet=True)
    """


def files(annotation: str, megatron: str, model_config: str = MODEL_CONFIG) -> dict:
    return {"proj/__init__.py": "", "proj/model_config.py": model_config,
            "proj/use.py": BUILD.format(annotation=annotation, megatron=megatron)}


@pytest.mark.parametrize("annotation, megatron", [
    ("ModelConfig", "TransformerConfig"),
    ("Optional[ModelConfig]", "typing.Optional[TransformerConfig]"),
    ("ModelConfig | None", "None | TransformerConfig"),
    ("Union[ModelConfig, None]", "Union[TransformerConfig, TransformerConfig, None]"),
    ("'ModelConfig'", "Optional['TransformerConfig']"),
])
def test_an_optional_annotation_types_the_parameter_as_its_class(tmp_path, wheels, annotation, megatron):
    got = findings(tmp_path, wheels, files(annotation, megatron), "0.4.0")
    assert got == {("proj/use.py", 7, c.MISSING_MEMBER, "legacy_gemm"),
                   ("proj/use.py", 7, c.UNEXPECTED_KEYWORD, "describe(quiet=)")}


@pytest.mark.parametrize("annotation, megatron", [
    ("Union[ModelConfig, dict]", "Union[TransformerConfig, dict]"),
    ("ModelConfig | str", "TransformerConfig | int"),
    ("list[ModelConfig]", "Optional[list]"),
])
def test_a_union_with_another_member_is_not_typed(tmp_path, wheels, annotation, megatron):
    assert findings(tmp_path, wheels, files(annotation, megatron), "0.4.0") == set()


def test_a_class_setting_computed_names_makes_a_missing_member_guarded_not_a_call(tmp_path, wheels):
    computed = MODEL_CONFIG.replace("self.derived = 2", "self.derived = 2\n            setattr(self, self.name, 1)")
    report_files = files("ModelConfig", "TransformerConfig", computed)
    report_files["proj/use.py"] = report_files["proj/use.py"].replace(
        "return config.legacy_gemm,", "return config.legacy_gemm, config.describe(quiet=True),")
    report = surface_gate(str(wheels["0.4.0"]), make_project(tmp_path / "p", report_files))
    got = {(f.line, f.name.rsplit(".", 1)[1], f.guarded) for f in report.findings if f.kind in c.BREAKING}
    # setattr may set legacy_gemm; it cannot change describe's signature
    assert got == {(7, "legacy_gemm", True), (7, "describe(quiet=)", False)}
    guard = next(f.guard for f in report.findings if f.name.endswith("legacy_gemm"))
    assert guard.startswith("computed setattr; ModelConfig sets attributes by computed name")


SUBCLASS = """
    from megatron.core.transformer_config import TransformerConfig
    class MlaConfig(TransformerConfig):
        lora_rank: int = 0
    """
READS = """
    from megatron.core.transformer_config import TransformerConfig
    def build(config: TransformerConfig):
        return (config.num_layers, config.legacy_gemm, config.lora_rank, config.stored, config.quoted, config.local,
                config.never_there)
    def tweak(model):
        model.config.stored = 1
        setattr(model, "quoted", 2)
    local = 3
    """


def test_a_member_an_annotated_megatron_class_lacks_fails_where_no_subclass_nor_the_project_defines_it(
        tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))
    paths = {version: make_wheel(cache, version, {
        "megatron/core/__init__.py": "", "megatron/core/mla.py": SUBCLASS,
        "megatron/core/transformer_config.py": CONFIG.format(field=field)})
        for version, field in (("0.3.0", "legacy_gemm: bool = False"), ("0.4.0", "new_gemm: bool = False"))}
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {v: False for v in paths})
    project = {"proj/__init__.py": "", "proj/use.py": READS}
    for version, expected in (("0.3.0", set()), ("0.4.0", {(4, "legacy_gemm", False)})):
        report = surface_gate(str(paths[version]), make_project(tmp_path / version, project))
        # lora_rank: a candidate subclass's field; stored, quoted, local: the project defines those names;
        # never_there: 0.3.0 lacks it too, so the parameter must be holding something else (the annotation is loose)
        assert {(f.line, f.name.rsplit(".", 1)[1], f.guarded) for f in report.findings
                if f.kind in c.BREAKING} == expected
    legacy = next(f for f in report.findings if f.name.endswith("legacy_gemm"))
    assert legacy.kind == c.MISSING_MEMBER and "0.3.0" in str(legacy.history)


def test_a_file_over_the_scan_cap_is_not_read_and_may_define_the_member(tmp_path, monkeypatch):
    from compat.tooling.gate.surface import project as surface_project

    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))
    paths = {version: make_wheel(cache, version, {
        "megatron/core/__init__.py": "", "megatron/core/transformer_config.py": CONFIG.format(field=field)})
        for version, field in (("0.3.0", "legacy_gemm: bool = False"), ("0.4.0", "new_gemm: bool = False"))}
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {v: False for v in paths})
    use = "from megatron.core.transformer_config import TransformerConfig\ndef build(config: TransformerConfig):\n" \
          "    return config.legacy_gemm\n"
    project = make_project(tmp_path / "p", {"proj/__init__.py": "", "proj/use.py": use,
                                            "proj/big.py": "# " + "x" * 400 + "\n"})
    breaking = {(f.path, f.line) for f in surface_gate(str(paths["0.4.0"]), project).findings if f.kind in c.BREAKING}
    assert breaking == {("proj/use.py", 3)}  # nothing in the project defines legacy_gemm
    monkeypatch.setattr(surface_project, "MAX_FILE_BYTES", 200)  # big.py is over the cap: the scan skips it
    from compat.tooling.gate.surface import annotated
    opened = []
    monkeypatch.setattr(annotated, "read_file", lambda path, *a, **k: opened.append(Path(path).name) or b"")
    report = surface_gate(str(paths["0.4.0"]), project)
    assert not [f for f in report.findings if f.kind in c.BREAKING]  # a file nobody read may define it
    assert "big.py" not in opened and "use.py" in opened


def test_a_project_subclass_that_may_set_any_name_keeps_annotated_reads_unchecked(tmp_path, wheels):
    opened = "class Loose(TransformerConfig):\n        def __getattr__(self, name):\n            return None\n"
    project = {"proj/__init__.py": "", "proj/use.py": READS, "proj/loose.py": SUBCLASS.replace(
        "class MlaConfig(TransformerConfig):\n        lora_rank: int = 0\n", opened)}
    report = surface_gate(str(wheels["0.4.0"]), make_project(tmp_path / "p", project))
    assert not [f for f in report.findings if f.kind in c.BREAKING]
