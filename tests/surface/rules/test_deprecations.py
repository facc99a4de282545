"""Deprecated members and packages: reported without failing the gate; a package's warning is about the imports
after it, not every import of the package."""
from __future__ import annotations

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import make_project, make_wheel


def test_deprecated_member_is_reported_without_failing(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.enums import ModelType
        x = ModelType.encoder_and_decoder
        """})
    report = surface_gate(str(releases["0.1.5"]), project)
    (dep,) = report.findings
    assert dep.kind == c.DEPRECATED and dep.line == 3 and "Deprecated property" in dep.instead
    assert report.exit_code == 0


def test_a_package_warning_is_about_the_imports_after_it_not_every_import(tmp_path, releases):
    wheel = make_wheel(tmp_path / "w", "0.3.0", {
        "megatron/core/__init__.py": "",
        "megatron/core/contexts/__init__.py": """
            import warnings
            from .static import Static
            warnings.warn("The following imports will be removed from this file", DeprecationWarning)
            from .dynamic import Dynamic
            """,
        "megatron/core/contexts/static.py": "class Static:\n    pass\n",
        "megatron/core/contexts/dynamic.py": "class Dynamic:\n    pass\n",
        "megatron/core/old/__init__.py": "import warnings\nwarnings.warn('old is deprecated', DeprecationWarning)\n",
        "megatron/core/old/x.py": "y = 1\n",
    })
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.contexts import Static
        from megatron.core.contexts import Dynamic
        from megatron.core.contexts.dynamic import Dynamic as D
        import megatron.core.old
        """})
    report = surface_gate(str(wheel), project, history=False)
    assert {(f.line, f.kind) for f in report.findings} == {(3, c.DEPRECATED), (5, c.DEPRECATED)}
    assert report.exit_code == 0
