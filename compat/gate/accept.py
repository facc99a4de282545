"""``gate --accept``: write a reviewed candidate into the registry and pin it in matrix.yaml."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import refresh
from .. import version as _v
from ..errors import CandidateError, CompatError
from .core import DEFAULT_REGISTRY, GateReport


def accept(report: GateReport, registry_path: Path | None = None, matrix_path: Path | None = None) -> dict:
    """Write the reviewed candidate into the registry and pin it in matrix.yaml (tools.matrix.add_pin)."""
    facts, registry_path = report.facts, Path(registry_path or DEFAULT_REGISTRY)
    if not facts.get("version"):
        raise CandidateError("cannot accept a candidate without a version (no METADATA, PKG-INFO or package_info.py)")
    version = _v.parse(facts["version"])
    if version.is_prerelease or version.is_devrelease or version.local:
        raise CandidateError(f"cannot accept {version}: the registry holds final releases only")
    if "optimizer" not in facts:
        raise CandidateError("cannot accept a candidate without megatron/core/optimizer/optimizer_config.py")
    old_text = registry_path.read_text(encoding="utf-8")
    data = json.loads(old_text)
    yanked = next((r["yanked"] for r in data["releases"] if r["version"] == str(version)), report.yanked)
    if yanked is None:
        yanked = refresh.list_releases().get(str(version), False)
    registry_path.write_text(refresh.dumps(refresh.add_release(data, str(version), yanked, facts)), encoding="utf-8")
    try:
        matrix = _matrix_module()
        kwargs = {"registry_path": registry_path, **({"path": Path(matrix_path)} if matrix_path else {})}
        try:
            pinned = matrix.add_pin(str(version), **kwargs)
        except matrix.DuplicatePinError as exc:
            pinned = f"not changed: {exc}"
    except BaseException as exc:
        registry_path.write_text(old_text, encoding="utf-8")
        if isinstance(exc, (ValueError, ImportError)):
            raise CompatError(f"matrix.yaml not updated ({exc}); {registry_path} left unchanged") from None
        raise
    report.accepted = {"version": str(version), "registry": str(registry_path), "matrix": pinned}
    return report.accepted


def _matrix_module():
    try:
        from tools import matrix
    except ImportError:  # run from outside the repository: tools/ sits next to compat/
        root = str(Path(__file__).resolve().parents[2])
        if root not in sys.path:
            sys.path.insert(0, root)
        from tools import matrix
    return matrix
