"""Keywords through a project function's ``**kwargs`` into a megatron call (the shape of recall
case mbridge_async_allreduce_kw): a keyword at a call of a project function or ``self.method`` that lands in
the function's ``**kwargs``, which it passes on (directly, or through ``d.update(kwargs)`` and ``**d``) to a megatron
callee, is checked against that callee; it never makes the call look complete."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import make_project, synthetic_releases

CONFIG = """
    class ParallelConfig:
        def __init__(self, size=1, **kwargs):
            self.size = size
    class TransformerConfig:
        def __init__(self, num_layers, hidden_size=1, {extra}):
            self.num_layers = num_layers
    """


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    return synthetic_releases(tmp_path, monkeypatch, {
        version: {"megatron/core/__init__.py": "", "megatron/core/config.py": CONFIG.format(extra=extra)}
        for version, extra in (("0.3.0", "async_allreduce=False"), ("0.4.0", "new_field=False"))})


BRIDGE = """
    from megatron.core.config import TransformerConfig
    def build(prefix=None, **kwargs):
        return TransformerConfig(**kwargs)
    class Bridge:
        def _base(self, key=None, **kwargs):
            base = {"num_layers": 2}
            base.update(kwargs)
            return TransformerConfig(**base)
        def _guarded(self, **kwargs):
            try:
                return TransformerConfig(**kwargs)
            except TypeError:
                return None
        def _two(self, **kwargs):
            TransformerConfig(**kwargs)
            return ParallelConfig(**kwargs)
    from megatron.core.config import ParallelConfig
    """
# The call sites are in functions that name something of megatron: the scan walks only those (project.py's quiet
# prefilter), and only files that say megatron.
MODELS = """
    from megatron.core.config import TransformerConfig
    from proj.bridge import Bridge, build
    class Qwen(Bridge):
        def config(self):
            return self._base(
                key="text",
                async_allreduce=True,
            ), TransformerConfig
        def other(self):
            return self._guarded(async_allreduce=True), self._two(async_allreduce=True), TransformerConfig
    def top():
        return build(prefix="p", async_allreduce=True), TransformerConfig
    def shadowed(build):
        return build(async_allreduce=True), TransformerConfig
    """


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0"])
def test_a_keyword_through_kwargs_is_checked_against_the_megatron_callee(tmp_path, wheels, version):
    project = make_project(tmp_path / "p", {"proj/__init__.py": "", "proj/bridge.py": BRIDGE,
                                            "proj/models.py": MODELS})
    report = surface_gate(str(wheels[version]), project)
    got = {(f.path, f.line, f.kind, f.name.rsplit(".", 1)[1]) for f in report.findings if f.kind in c.BREAKING}
    # num_layers is required and never given at the call sites: not reported (the forwarder may add it); key= and
    # prefix= are the forwarders' own; a forwarding call under a guard (the try), or two different callees, forward
    # nothing; a parameter named like the function is not it
    expected = set() if version == "0.3.0" else {
        ("proj/models.py", 8, c.UNEXPECTED_KEYWORD, "TransformerConfig(async_allreduce=)"),
        ("proj/models.py", 13, c.UNEXPECTED_KEYWORD, "TransformerConfig(async_allreduce=)")}
    assert got == expected


def test_a_method_a_project_subclass_redefines_forwards_nothing(tmp_path, wheels):
    project = make_project(tmp_path / "p", {"proj/__init__.py": "", "proj/bridge.py": BRIDGE,
                                            "proj/models.py": MODELS,
                                            "proj/more.py": "from proj.bridge import Bridge\nclass Mine(Bridge):\n"
                                                            "    def _base(self, **kwargs):\n        return None\n"})
    report = surface_gate(str(wheels["0.4.0"]), project)
    got = {(f.path, f.line) for f in report.findings if f.kind in c.BREAKING}
    assert got == {("proj/models.py", 13)}


# mbridge's shape: the forwarder calls ``self.ConfigClass(**base)``, a class attribute each bridge sets to
# TransformerConfig or to its own dataclass subclass of it
CLASS_BRIDGE = """
    from megatron.core.config import TransformerConfig
    class Bridge:
        ConfigClass = TransformerConfig
        def _base(self, key=None, **kwargs):
            base = {"num_layers": 2}
            base.update(kwargs)
            return self.ConfigClass(**base)
    class Unknown(Bridge):
        ConfigClass = make_config()
    class Swapped(Bridge):
        def __init__(self):
            self.ConfigClass = None
    class Replaced(Bridge):
        ConfigClass = TransformerConfig
        ConfigClass = make_config()
    """
# each call site names TransformerConfig: the scan walks only such functions (see MODELS)
CLASS_MODELS = """
    from dataclasses import dataclass
    from megatron.core.config import TransformerConfig
    from proj.bridge import Bridge, Replaced, Swapped, Unknown
    @dataclass
    class VlConfig(TransformerConfig):
        patch_size: int = 14
    class Plain(Bridge):
        def config(self):
            return self._base(async_allreduce=True), TransformerConfig
    class Vl(Bridge):
        ConfigClass = VlConfig
        def config(self):
            return self._base(patch_size=16, async_allreduce=True), TransformerConfig
    class VlChild(Vl):
        def config(self):
            return self._base(patch_size=16, other_gone=True), TransformerConfig
    class Opaque(Unknown):
        def config(self):
            return self._base(async_allreduce=True), TransformerConfig
    class Stored(Swapped):
        def config(self):
            return self._base(async_allreduce=True), TransformerConfig
    class Later(Replaced):
        def config(self):
            return self._base(async_allreduce=True), TransformerConfig
    """


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0"])
def test_a_forwarder_into_a_class_attribute_is_checked_in_the_calling_class(tmp_path, wheels, version):
    project = make_project(tmp_path / "p", {"proj/__init__.py": "", "proj/bridge.py": CLASS_BRIDGE,
                                            "proj/models.py": CLASS_MODELS})
    report = surface_gate(str(wheels[version]), project)
    got = {(f.line, f.name.rsplit(".", 1)[1]) for f in report.findings if f.kind in c.BREAKING}
    # patch_size= is VlConfig's own field; VlChild inherits Vl's ConfigClass; Opaque's is a computed value,
    # Stored's is rebound on self and Later's last binding in the class body is a computed value: not known, so
    # nothing is claimed for them
    assert got == ({(17, "TransformerConfig(other_gone=)")} if version == "0.3.0" else {
        (10, "TransformerConfig(async_allreduce=)"), (14, "TransformerConfig(async_allreduce=)"),
        (17, "TransformerConfig(other_gone=)")})


@pytest.mark.parametrize("header", ["", "# a megatron bridge"])
def test_a_forwarder_reached_through_a_package_reexport_and_files_that_never_say_megatron(tmp_path, wheels, header):
    # mbridge's layout: the forwarder's class is a base of a base, named through a package __init__; the files
    # between and the call site's file never say megatron, and the calling method names nothing of it either.
    # With the header the call site's file is read in the first round, before the forwarders are known: it is
    # read again once they are, since it calls one of their methods
    project = make_project(tmp_path / "p", {
        "pkg/__init__.py": "",
        "pkg/core/__init__.py": "from .llm import LLMBridge\nfrom .vl import VLBridge\n",
        "pkg/core/llm.py": """
            from megatron.core.config import TransformerConfig
            class LLMBridge:
                ConfigClass = TransformerConfig
                def _base(self, **kwargs):
                    base = {"num_layers": 2}
                    base.update(kwargs)
                    return self.ConfigClass(**base)
            """,
        "pkg/core/vl.py": "from .llm import LLMBridge\nclass VLBridge(LLMBridge):\n    pass\n",
        "pkg/models/__init__.py": "",
        "pkg/models/base.py": """
            from megatron.core.config import ParallelConfig
            from pkg.core import VLBridge
            class QwenBase(VLBridge):
                def parallel(self):
                    return ParallelConfig()
            """,
        "pkg/models/qwen.py": f"""
            {header}
            from pkg.models.base import QwenBase
            class Qwen(QwenBase):
                def _config(self):
                    return self._base(
                        async_allreduce=True,
                    )
            """})
    got = {(f.path, f.line, f.name.rsplit(".", 1)[1]) for f in surface_gate(str(wheels["0.4.0"]), project).findings
           if f.kind in c.BREAKING}
    assert got == {("pkg/models/qwen.py", 7, "TransformerConfig(async_allreduce=)")}


ONE_FILE = """
    from megatron.core.config import TransformerConfig
    class Bridge:
        def _base(self, **kwargs):
            return TransformerConfig(**kwargs)
    class Qwen(Bridge):
        def _config(self):
            return self._base(async_allreduce=True)
    """  # a forwarder and its caller in one file; the calling method names nothing of megatron


def test_a_forwarder_called_in_its_own_file_from_a_method_that_names_nothing_of_megatron(tmp_path, wheels):
    project = make_project(tmp_path / "p", {"one.py": ONE_FILE})
    got = {(f.line, f.name.rsplit(".", 1)[1]) for f in surface_gate(str(wheels["0.4.0"]), project).findings
           if f.kind in c.BREAKING}
    assert got == {(8, "TransformerConfig(async_allreduce=)")}


def test_only_files_with_a_class_below_a_forwarders_class_are_read_again(tmp_path, wheels, monkeypatch):
    from compat.tooling.gate.surface import project as scan_module
    reads: list = []
    real = scan_module._scan_file
    monkeypatch.setattr(scan_module, "_scan_file", lambda rel, *a, **k: reads.append(rel) or real(rel, *a, **k))
    project = make_project(tmp_path / "p", {"one.py": ONE_FILE, "other.py": """
        # megatron
        class Unrelated:
            def run(self, bridge):
                return bridge._base(x=1), self.__init__()
        """})
    scan_module.scan_project(project, cache=False)
    assert sorted(reads) == ["one.py", "one.py", "other.py"]
