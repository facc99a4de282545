"""Fixtures shared by the surface-gate tests: a candidate megatron-core tree and a project, written under tmp_path,
and the gate run on them in process (the same calls as ``gate --project``, without the history); the small
synthetic release history of builders.py, cached and modelled. The wheels, projects and gate helpers that test
modules import are in builders.py."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface.cache import model_for, release_models
from compat.tooling.gate.surface.project import scan_project
from compat.tooling.gate.surface.release_gate import SurfaceReport, check_model

from .builders import fresh_releases, make_project


def candidate_files(version: str, modules: dict) -> dict:
    """A megatron-core tree: the packages, package_info with ``version``, and ``modules`` (path -> source)."""
    major, minor, patch = version.split(".")
    return {"megatron/__init__.py": "", "megatron/core/__init__.py": "",
            "megatron/core/package_info.py": f"MAJOR, MINOR, PATCH = {major}, {minor}, {patch}\n"
                                             f"__version__ = '{version}'\n", **modules}




@pytest.fixture
def surface_report(tmp_path):
    """``surface_report(project_files, candidate_modules, version="0.2.0")`` -> the SurfaceReport."""
    def run(project: dict, candidate: dict, version: str = "0.2.0") -> SurfaceReport:
        tree = make_project(tmp_path / f"candidate-{version}", candidate_files(version, candidate))
        scan = scan_project(make_project(tmp_path / "project", project), cache=False)
        return check_model(scan, model_for(tree), str(tree))
    return run


@pytest.fixture
def releases(tmp_path, monkeypatch):
    """An isolated cache holding three synthetic releases (builders.py: 0.1.0, 0.1.5, 0.2.0), modelled (the history
    column sees all three); the index lists them (no network)."""
    paths = fresh_releases(tmp_path, monkeypatch)
    release_models()
    return paths
