"""The markdown report escapes what the project's file names could inject."""
from __future__ import annotations

from compat.tooling.gate.surface.release_gate import surface_gate

from .builders import make_project


def test_markdown_escapes_project_text(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"we|ird`name\n## x.py": """
        from megatron.core.enums import ModelType
        ModelType.gone
        """})
    text = surface_gate(str(releases["0.2.0"]), project).to_markdown()
    row = next(line for line in text.splitlines() if "ModelType.gone" in line)
    assert "\\n## x.py" in row and "\n## x" not in text and "we\\|ird" in row
