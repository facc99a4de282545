"""The upgrade gate: diff a candidate megatron-core against the registry and classify every change.

``python -m compat gate CANDIDATE`` where CANDIDATE is ``megatron-core==X``, ``latest``, a wheel, an sdist or a
Megatron-LM checkout. The candidate is read with ``ast`` (never imported), archives in memory. Exit 0: compatible
(informational changes only); 1: needs review or breaking; 2: usage; 3: the candidate could not be read.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import refresh
from . import version as _v
from .errors import CandidateError, CompatError, VersionError
from .extract import extract_candidate
from .gate_diff import (BREAKING, DDP, DECISION, INFO, LEVELS, Change, diff_ddp, optimizer_changes,  # noqa: F401
                        shim_fields, type_key)
from .registry import Registry, schema_from_snapshot
from .registry import renames as registry_renames
from .registry import rules as registry_rules

FALLBACK_PYTHONS = ("3.12", "3.13", "3.14", "3.11", "3.10")  # wheel tags tried when the default finds none
_SPEC = re.compile(r"^\s*megatron[-_.]core\s*==\s*(\S+)\s*$", re.IGNORECASE)
DEFAULT_REGISTRY = Path(__file__).with_name("data") / "registry.json"


class GateUsageError(Exception):
    """Bad arguments (exit 2)."""


@dataclass
class GateReport:
    candidate: str  # the candidate's version, or its file name when it has none
    source: str
    kind: str
    against: str
    changes: list
    facts: dict = field(repr=False, default_factory=dict)
    yanked: bool | None = False  # None: a release spec whose yanked flag was not looked up
    accepted: dict | None = None

    def by_level(self, level: str) -> list:
        return [c for c in self.changes if c.level == level]

    @property
    def verdict(self) -> str:
        if self.by_level(BREAKING):
            return "breaking"
        return "needs review" if self.by_level(DECISION) else "compatible"

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict == "compatible" or self.accepted else 1

    def to_dict(self) -> dict:
        return {"candidate": self.candidate, "source": self.source, "kind": self.kind, "against": self.against,
                "requires_python": self.facts.get("requires_python"), "verdict": self.verdict,
                "exit_code": self.exit_code, "ddp_sha256": self.facts.get("ddp", {}).get("sha256"),
                "changes": {level: [asdict(c) for c in self.by_level(level)] for level in LEVELS},
                "accepted": self.accepted}

    def to_markdown(self) -> str:
        from .gate_report import markdown

        return markdown(self)


# ------------------------------------------------------------------------------------------ the candidate
def locate(candidate: str, dest: Path | None = None) -> tuple[Path, bool | None]:
    """A local wheel/sdist/tree for CANDIDATE (downloading a release spec). Returns (path, yanked or None)."""
    path = Path(candidate).expanduser()
    if path.exists():
        return path, False
    spec = _SPEC.match(candidate)
    if candidate.strip().lower() == "latest":
        releases = refresh.list_releases()
        finals = [v for v, yanked in releases.items() if not yanked]
        if not finals:
            raise CandidateError(f"the index lists no final {refresh.PACKAGE} release")
        return fetch_release(_v.newest(finals), dest), False
    if spec:
        try:
            version = str(_v.parse(spec.group(1)))
        except VersionError as exc:
            raise GateUsageError(str(exc)) from None
        return fetch_release(version, dest), None  # yanked: unknown until --accept asks the index
    if any(op in candidate for op in ("<", ">", "~=", "!=")):
        raise GateUsageError(f"{candidate!r}: pin one release with megatron-core==VERSION, or use latest")
    raise CandidateError(f"candidate {candidate!r} does not exist (expected megatron-core==VERSION, latest, "
                         "a wheel, an sdist or a Megatron-LM checkout)")


def fetch_release(version: str, dest: Path | None = None) -> Path:
    """``pip download --no-deps`` the release's wheel into the cache, for whichever Python tag it ships."""
    kwargs = {"dest": dest} if dest else {}
    try:
        return refresh.download(version, **kwargs)
    except CandidateError as first:
        listed = refresh.list_releases()  # raises a clear error when the index is unreachable
        if version not in listed:
            raise CandidateError(f"{refresh.PACKAGE} {version} is not a final release on {refresh.index_url()} "
                                 f"(newest: {_v.newest(listed) if listed else 'none'})") from None
        for python in FALLBACK_PYTHONS:
            try:
                return refresh.download(version, python_version=python, **kwargs)
            except CandidateError:
                continue
        raise first from None


def read_candidate(path: Path) -> dict:
    """extract_candidate, with any failure on a malformed archive turned into a one-line CandidateError."""
    try:
        return extract_candidate(path)
    except CandidateError as exc:
        if "\n" not in str(exc):
            raise
        raise CandidateError(" ".join(str(exc).split())) from None  # one line, e.g. tarfile's per-method list
    except CompatError:
        raise
    except Exception as exc:  # an untrusted archive can fail in many ways; none of them deserve a traceback
        raise CandidateError(f"cannot read {path.name}: {type(exc).__name__}: {exc}") from None


def compare(facts: dict, reg: Registry, against: str | None = None, *, renames=None, rules=None,
            source: str = "", yanked: bool | None = False) -> GateReport:
    """Classify every change between the candidate's facts and registry release ``against`` (default: newest)."""
    renames = renames if renames is not None else list(registry_renames())
    rules = rules if rules is not None else registry_rules()
    against = resolve_against(reg, against)
    base = reg.schema(against)
    cand = schema_from_snapshot(facts["version"] or "candidate", "candidate", facts["ddp"])
    changes = diff_ddp(base, cand, renames, rules, facts["version"])
    changes += optimizer_changes(reg.optimizer_fields(against), facts)
    order = {level: i for i, level in enumerate(LEVELS)}
    changes.sort(key=lambda c: (order[c.level], c.config != DDP))
    label = facts["version"] or f"{Path(source).name} (version unknown)"
    return GateReport(label, source, facts["kind"], against, changes, facts, yanked)


def resolve_against(reg: Registry, against: str | None) -> str:
    if against is None:
        return reg.newest()
    try:
        release, how = _v.match_release(against, reg.versions())
    except VersionError as exc:
        raise GateUsageError(f"--against {against}: {exc}") from None
    if how != "exact":
        raise GateUsageError(f"--against {against}: not a registry release (known: "
                             f"{', '.join(reg.versions())})")
    return release


def gate(candidate, reg: Registry | None = None, against: str | None = None, *, renames=None, rules=None,
         dest: Path | None = None) -> GateReport:
    """Locate (download) CANDIDATE, extract it with ast and compare it with the registry."""
    reg = reg if reg is not None else load_registry()
    path, yanked = locate(str(candidate), dest)
    return compare(read_candidate(path), reg, against, renames=renames, rules=rules, source=str(candidate),
                   yanked=yanked)


def load_registry(path: Path | None = None) -> Registry:
    path = Path(path) if path else DEFAULT_REGISTRY
    try:
        return Registry(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError) as exc:
        raise GateUsageError(f"cannot load registry {path}: {exc}") from None


# ------------------------------------------------------------------------------------------ --accept
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
        root = str(Path(__file__).resolve().parent.parent)
        if root not in sys.path:
            sys.path.insert(0, root)
        from tools import matrix
    return matrix


# ------------------------------------------------------------------------------------------ CLI
def cmd_gate(args) -> int:
    try:
        reg = load_registry(args.registry)
        against = resolve_against(reg, args.against)
        report = gate(args.candidate, reg, against)
        if args.accept:
            accept(report, args.registry, args.matrix)
    except GateUsageError as exc:
        print(f"usage error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_dict(), indent=1, default=str) if args.json else report.to_markdown())
    return report.exit_code


def register(sub) -> None:
    p = sub.add_parser("gate", help="review a megatron-core release, wheel, sdist or checkout against the registry",
                       description=__doc__)
    p.add_argument("candidate", help="megatron-core==VERSION, latest, a wheel or sdist path, or a Megatron-LM checkout")
    p.add_argument("--against", metavar="VERSION", help="registry release to compare with (default: the newest)")
    p.add_argument("--registry", metavar="PATH", help="registry.json to read (and with --accept, write)")
    p.add_argument("--matrix", metavar="PATH", help="matrix.yaml that --accept pins the candidate in")
    p.add_argument("--accept", action="store_true",
                   help="after review: write the candidate into the registry and pin it in matrix.yaml (exit 0)")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.set_defaults(func=cmd_gate)
