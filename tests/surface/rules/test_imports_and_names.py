"""Which names are megatron's: imports in every scope (parameters and local bindings shadow them, imports inside a
function count), names re-exported through the project's own modules and its own ``megatron.*`` namespace package
(which is not checked itself), star imports and ``__import__``."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import breaking_places as where
from ..builders import gate_on_pair as gate
from ..builders import make_project, names, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_scopes_params_shadow_imports_and_function_imports_count(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core import parallel_state as mpu
        def uses_param(mpu):
            return mpu.get_nothing()  # a parameter, not the module
        def imports_inside():
            from megatron.core.enums import ModelType as MT
            return MT.encoder_and_decoder
        class Model:
            def method(self):
                return mpu.get_also_nothing()
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.line, f.name) for f in report.findings} == {
        (7, "megatron.core.enums.ModelType.encoder_and_decoder"),
        (10, "megatron.core.parallel_state.get_also_nothing")}


def test_the_projects_own_megatron_namespace_is_not_checked(tmp_path, releases):
    project = make_project(tmp_path / "proj", {
        "src/megatron/bridge/__init__.py": "from megatron.bridge.models import AutoBridge\n",
        "src/megatron/bridge/models.py": "from megatron.core.enums import ModelType\nAutoBridge = ModelType.nope\n",
    })
    report = surface_gate(str(releases["0.2.0"]), project)
    assert report.scan.own_packages == ["megatron.bridge"]
    assert names(report.findings) == {"megatron.core.enums.ModelType.nope"}


def test_names_re_exported_through_the_projects_own_megatron_package_are_followed(tmp_path, releases):
    project = make_project(tmp_path / "proj", {
        "src/megatron/bridge/__init__.py": "",
        "src/megatron/bridge/state.py": "from megatron.core import parallel_state as mpu\n",
        "src/megatron/bridge/train.py": "from megatron.bridge.state import mpu\nmpu.never_existed()\n",
        "src/megatron/bridge/helpers.py": "def make(x):\n    return x\n",
        "tests/test_helpers.py": "from megatron.bridge.helpers import make\nmake(1)\n",  # not 'not shipped'
    })
    report = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.path, f.line, f.name) for f in report.findings} == {
        ("src/megatron/bridge/train.py", 2, "megatron.core.parallel_state.never_existed")}


def test_names_re_exported_through_project_modules_are_followed(tmp_path, wheels):
    report = gate(tmp_path, wheels, {
        "pkg/__init__.py": "",
        "pkg/helper.py": "from megatron.core import mpu\n",
        "pkg/chain.py": "from pkg.helper import mpu as state\n",
        "pkg/direct.py": "from megatron.core import mpu\nmpu.get_tensor_and_expert_parallel_rank()\n",
        "pkg/use.py": "from pkg.helper import mpu\nmpu.get_tensor_and_expert_parallel_rank()\n",
        "pkg/rel.py": "from .chain import state\nstate.get_tensor_and_expert_parallel_rank()\n",
        "pkg/fine.py": "from pkg.helper import mpu\nmpu.get_tensor_model_parallel_rank()\n",
    })
    assert where(report) == {(f"pkg/{name}.py", 2, c.MISSING_NAME) for name in ("direct", "use", "rel")}


def test_names_from_a_megatron_star_import_and_dunder_import_are_checked(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        from megatron.core.parallel_state import *
        def f(local):
            get_tensor_model_parallel_rank()
            get_tensor_and_expert_parallel_rank()
            print(local, len([]))
        ps = __import__("megatron.core.gone_module")
        """, "b.py": """
        from megatron.core.parallel_state import *
        from elsewhere import *
        get_tensor_and_expert_parallel_rank()
        """})
    # b.py: the name may come from the other star import, so it is not claimed for megatron
    assert where(report) == {("a.py", 5, c.MISSING_NAME), ("a.py", 7, c.MISSING_MODULE)}


SHADOWED = {
    "comprehension": """
        [mpu.get_tensor_and_expert_parallel_rank() for mpu in others]
        """,
    "module_rebinding": """
        mpu = Other()
        mpu.get_tensor_and_expert_parallel_rank()
        """,
    "walrus": """
        if (mpu := Other()) is not None:
            mpu.get_tensor_and_expert_parallel_rank()
        """,
    "match_capture": """
        match others:
            case [mpu]:
                mpu.get_tensor_and_expert_parallel_rank()
        """,
    "class_body": """
        class Holder:
            mpu = Other()
            mpu.get_tensor_and_expert_parallel_rank()
        """,
    "del_then_rebind": """
        del mpu
        if others:
            mpu = Other()
        mpu.get_tensor_and_expert_parallel_rank()
        """,
}


@pytest.mark.parametrize("case", sorted(SHADOWED))
def test_a_name_shadowed_by_a_local_binding_is_not_megatron(tmp_path, wheels, case):
    head = "from megatron.core import mpu\nfrom x import Other, others\n"
    report = gate(tmp_path, wheels, {"a.py": head + SHADOWED[case].strip("\n").replace("\n        ", "\n")
                                     .removeprefix("        ")})
    assert where(report) == set()


def test_shadowing_is_scoped(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        from megatron.core import mpu
        from x import others
        ranks = [m for mpu in others for m in [mpu]]
        class Holder:
            mpu = None
            def rank(self):
                return mpu.get_tensor_and_expert_parallel_rank()
        mpu.get_tensor_and_expert_parallel_rank()
        """})
    # the method body does not see the class attribute; the comprehension's mpu does not leak
    assert where(report) == {("a.py", 8, c.MISSING_NAME), ("a.py", 9, c.MISSING_NAME)}
