# SPDX-License-Identifier: Apache-2.0
"""``gate --accept``: write a reviewed candidate into the registry, and have the caller's ``pin`` record it.

``pin`` is how the matrix tools (tools/matrix.py, which owns matrix.yaml) join in: it is called with the accepted
version under the registry lock, and if it fails the registry is restored. The read-modify-write of registry.json
runs under a lock beside it (two concurrent accepts are serialised, none is lost), files are written atomically (a
full disk leaves the old file), and a release already in the registry is replaced only with ``replace=True``
(``--replace``)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ... import registry_format
from ... import version as _v
from ...errors import CandidateError, CompatError
from .config_gate import DEFAULT_REGISTRY, GateReport
from .registry_file import dumps_registry, read_registry, unwritable


class ReplaceRefusedError(CompatError):
    """The candidate claims a version the registry already holds with other config facts."""


NOT_PINNED = "not pinned: matrix.yaml is the matrix tools' file (`python -m tools.matrix gate ... --accept`)"


def accept(report: GateReport, registry_path: Path | None = None, *, replace: bool = False,
           pin: Callable[[str, Path], str] | None = None) -> dict:
    """Write the reviewed candidate into the registry; ``pin(version, registry_path)`` (the matrix tools) records
    it in the test matrix and returns what it did. Returns {version, registry, registry_action, matrix}."""
    from .. import refresh  # with the downloader (~25 ms of imports): only --accept needs it
    from ..fsutil import atomic_write_bytes, atomic_write_text, locked

    facts, registry_path = report.facts, Path(registry_path or DEFAULT_REGISTRY)
    if not facts.get("version"):
        raise CandidateError("cannot accept a candidate without a version (no METADATA, PKG-INFO or package_info.py)")
    version = _v.parse(facts["version"])
    if version.is_prerelease or version.is_devrelease or version.local:
        raise CandidateError(f"cannot accept {version}: the registry holds final releases only")
    missing = [c for c in report.by_level("breaking") if c.what == "missing"]
    if missing or "optimizer" not in facts:
        lacks = ", ".join(f"{c.config} ({c.old})" for c in missing) or "OptimizerConfig"
        raise CandidateError(f"cannot accept {version}: it lacks {lacks}, which the compared release has")
    bad = unwritable(facts)
    if bad:
        raise CandidateError(f"cannot accept {version}: the registry is strict UTF-8 JSON (no Infinity, NaN or "
                             f"lone surrogates): {'; '.join(bad)}")
    with locked(registry_path):
        data, old_raw = read_registry(registry_path)  # re-read under the lock: another accept may have written
        existing = next((r for r in registry_format.decode(data) if _v.parse(r["version"]) == version), None)
        record = {"requires_python": facts["requires_python"],
                  **registry_format.release_facts(str(version), False, facts)["configs"]}
        old = {"requires_python": existing["requires_python"], **existing["configs"]} if existing else {}
        changed = [k for k in sorted(set(record) | set(old)) if record.get(k) != old.get(k)]
        same = existing is not None and not changed
        if existing is not None and not same and not replace:
            changed = ", ".join(changed)
            raise ReplaceRefusedError(
                f"{registry_path} already holds megatron-core {existing['version']} with a different {changed}; "
                f"the candidate claims the same version. Nothing was written; pass --replace to overwrite it")
        name = existing["version"] if existing is not None else str(version)  # 0.19.2.0 replaces 0.19.2
        yanked = existing["yanked"] if existing is not None else report.yanked
        if yanked is None:
            yanked = refresh.list_releases().get(name, False)
        if not same:
            new = refresh.add_release(data, name, yanked, facts)
            atomic_write_text(registry_path, dumps_registry(new, str(registry_path)))
        if pin is None:
            pinned = NOT_PINNED
        else:
            try:
                pinned = pin(name, registry_path)
            except BaseException as exc:
                if not same:
                    atomic_write_bytes(registry_path, old_raw)
                if isinstance(exc, (ValueError, ImportError, OSError)):
                    raise CompatError(f"matrix.yaml not updated ({exc}); {registry_path} left unchanged") from None
                raise
    action = ("already registered, unchanged" if same else
              "replaced" if existing is not None else "added")
    report.accepted = {"version": name, "registry": str(registry_path), "registry_action": action,
                       "matrix": pinned}
    return report.accepted
