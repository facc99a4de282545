"""Instances of a project's own subclass of a megatron class (the shape of recall case swift_legacy_grouped_gemm):
a parameter annotated with ``class ModelConfig(TransformerConfig)`` from another project file, or ``c = ModelConfig()``,
has the project class's members and its megatron bases'. A read of a member neither has fails; nothing is said
where the type may hold more (a further subclass anywhere in the project, a base neither the project's nor
megatron's, ``__getattr__``, or the project storing the member on such an instance); a computed ``setattr``: see
test_annotated_parameters.py."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.instances import PROJECT_CLASS
from compat.tooling.gate.surface.project import scan_source
from compat.tooling.gate.surface.project_classes import base_names

from ..builders import SUBCLASS_MODEL_CONFIG as MODEL_CONFIG
from ..builders import subclass_findings as findings
from ..builders import subclass_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """SUBCLASS_CONFIG's releases 0.3.0 and 0.4.0 (builders.py)."""
    return subclass_releases(tmp_path, monkeypatch)


USES = """
    from proj.model_config import ModelConfig
    def build(config: ModelConfig):
        return config.num_layers, config.own_field, config.derived, config.legacy_gemm
    def make():
        c = ModelConfig()
        return c.legacy_gemm, c.describe(verbose=True), c.describe(quiet=True)
    """


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0"])
def test_members_of_a_leaf_project_subclass_are_the_classs_own_and_its_megatron_bases(tmp_path, wheels, version):
    got = findings(tmp_path, wheels, {"proj/__init__.py": "", "proj/model_config.py": MODEL_CONFIG,
                                      "proj/use.py": USES}, version)
    # own_field (a field), derived (stored in a method) and num_layers (the base's) are there on both releases;
    # legacy_gemm only on 0.3.0; describe takes verbose= on both, never quiet=
    expected = {("proj/use.py", 7, c.UNEXPECTED_KEYWORD, "describe(quiet=)")}
    if version == "0.4.0":
        expected |= {("proj/use.py", 4, c.MISSING_MEMBER, "legacy_gemm"),
                     ("proj/use.py", 7, c.MISSING_MEMBER, "legacy_gemm")}
    assert got == expected


@pytest.mark.parametrize("opening", [
    pytest.param({"proj/more.py": "from proj.model_config import ModelConfig\nclass Bigger(ModelConfig):\n"
                                  "    legacy_gemm = True\n"}, id="a further subclass, in a file that never says "
                                                                 "megatron"),
    pytest.param({"proj/model_config.py": MODEL_CONFIG + "        def __getattr__(self, name):\n"
                                                         "            return None\n"}, id="__getattr__"),
    pytest.param({"proj/model_config.py": MODEL_CONFIG.replace("(TransformerConfig)", "(TransformerConfig, Mixin)")
                  .replace("@dataclass\n    class", "from proj.mixins import Mixin\n    @dataclass\n    class")},
                 id="a base neither the project's (scanned) nor megatron's"),
    pytest.param({"proj/store.py": "from proj.model_config import ModelConfig\n"
                                   "def patch(config: ModelConfig):\n    config.legacy_gemm = True\n"},
                 id="the project stores the member on an instance"),
])
def test_nothing_is_said_where_the_instance_may_have_more_members(tmp_path, wheels, opening):
    files = {"proj/__init__.py": "", "proj/model_config.py": MODEL_CONFIG, "proj/use.py": USES,
             "proj/mixins.py": "class Mixin:\n    pass\n", **opening}
    got = findings(tmp_path, wheels, files, "0.4.0")
    # a store makes that one member the project's; the other openings leave no member of the class checked
    stored = "proj/store.py" in opening
    assert got == ({("proj/use.py", 7, c.UNEXPECTED_KEYWORD, "describe(quiet=)")} if stored else set())


def test_a_project_chain_up_to_megatron_is_followed_and_a_local_rebinding_is_not_held(tmp_path, wheels):
    files = {"proj/__init__.py": "", "proj/model_config.py": MODEL_CONFIG,
             "proj/middle.py": "from proj.model_config import ModelConfig\nclass Middle(ModelConfig):\n"
                               "    middle_field = 1\n",
             "proj/use.py": """
                 from proj.middle import Middle
                 def read(config: Middle, other: Middle):
                     other = other or None
                     return config.middle_field, config.own_field, config.legacy_gemm, other.legacy_gemm
                 """}
    got = findings(tmp_path, wheels, files, "0.4.0")
    assert got == {("proj/use.py", 5, c.MISSING_MEMBER, "legacy_gemm")}  # ModelConfig is subclassed: only Middle


def test_a_project_subclass_named_through_a_package_reexport_is_typed(tmp_path, wheels):
    files = {"proj/__init__.py": "from .model_config import ModelConfig\n", "proj/model_config.py": MODEL_CONFIG,
             "proj/use.py": USES.replace("from proj.model_config import ModelConfig", "from proj import ModelConfig")}
    got = findings(tmp_path, wheels, files, "0.4.0")
    assert got == {("proj/use.py", 4, c.MISSING_MEMBER, "legacy_gemm"),
                   ("proj/use.py", 7, c.MISSING_MEMBER, "legacy_gemm"),
                   ("proj/use.py", 7, c.UNEXPECTED_KEYWORD, "describe(quiet=)")}


def test_base_names_of_class_lines():
    data = b"class A(B, pkg.C, metaclass=M):\n    class D(E):\n        pass\nclass F:\n    pass\n"
    assert base_names(data) == {"B", "C", "M", "E"}


def test_the_prefilter_walks_a_function_that_names_only_a_project_class():
    # the quiet-function prefilter (project._FileScanner.quiet) must keep such a function: it spells no megatron name
    source = "from proj.model_config import ModelConfig\ndef build(config: ModelConfig):\n    return config.gone\n"
    uses, _ = scan_source(source)
    full, _ = scan_source(source, prefilter=False)
    assert [(u.line, u.name, u.via) for u in uses] == [(u.line, u.name, u.via) for u in full] \
        == [(3, "proj.model_config.ModelConfig.gone", PROJECT_CLASS)]
