"""The project scan reads boundedly: size and file-count caps, links, VCS folders, virtual environments and
non-regular files skipped."""
from __future__ import annotations

import os

import pytest

from compat.tooling.gate.surface import project as surface_project

from .builders import make_project


def test_project_reads_are_bounded_and_skip_links_vcs_and_venvs(tmp_path, releases, monkeypatch):
    project = make_project(tmp_path / "proj", {
        "ok.py": "from megatron.core.enums import ModelType\nModelType.gone\n",
        ".git/hooks/x.py": "from megatron.core.enums import ModelType\nModelType.gone\n",
        "venv/lib/x.py": "from megatron.core.enums import ModelType\nModelType.gone\n",
        "env2/pyvenv.cfg": "",
        "env2/lib/x.py": "from megatron.core.enums import ModelType\nModelType.gone\n",
        "big.py": "# megatron\n" + "x = 1\n" * 20,
        "broken.py": "import megatron.core\ndef (:\n",
    })
    (project / "linked.py").symlink_to(project / "ok.py")
    os.mkfifo(project / "fifo.py")
    monkeypatch.setattr(surface_project, "MAX_FILE_BYTES", 64)
    scan = surface_project.scan_project(project)
    assert {u.path for u in scan.uses} == {"ok.py"}
    skipped = dict(scan.skipped)
    assert "over 64 bytes" in skipped["big.py"] and "does not parse" in skipped["broken.py"]
    assert "fifo.py" in skipped  # not a regular file: refused, not opened
    monkeypatch.setattr(surface_project, "MAX_FILES", 3)
    with pytest.raises(surface_project.ProjectError, match="over 3 Python files"):
        surface_project.scan_project(project)
