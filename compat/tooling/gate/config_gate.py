# SPDX-License-Identifier: Apache-2.0
"""The config gate: diff a candidate's config dataclasses against the registry and build the report."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ... import version as _v
from ...configs import CONFIGS
from ...errors import VersionError
from ...registry import Registry, schema_from_snapshot
from ...registry import renames as registry_renames
from ...registry import rules as registry_rules
from .candidate import GateUsageError, locate, read_candidate
from .diff import BREAKING, DECISION, INFO, LEVELS, Change, diff_config
from .label import claimed_release, label_record, previous_pin
from .policy import order

DEFAULT_REGISTRY = Path(__file__).resolve().parents[2] / "data" / "registry.json"


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
    label: dict | None = None  # the registry release its version names, and whether its config differs (label.py)
    baseline: str | None = None  # why `against` was chosen, when the gate chose it
    sections: dict = field(default_factory=dict)  # more facts for the report: "install", "metadata", ...

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
                "accepted": self.accepted, "checkpoints": self.checkpoints(), "label": self.label,
                "baseline": self.baseline, **self.sections}

    def checkpoints(self) -> dict | None:
        """The checkpoint lane's verdict for the pin before the candidate -> the candidate (gate/ckpt.py)."""
        from .ckpt import lane_verdict

        return lane_verdict(self.facts.get("version"), self.against)

    def training(self) -> dict | None:
        """The equivalence lane's verdict for the pin before the candidate -> the candidate (gate/training.py)."""
        from .training import lane_verdict

        return lane_verdict(self.facts.get("version"), self.against)

    def to_markdown(self) -> str:
        from .report import markdown

        return markdown(self)


def compare(facts: dict, reg: Registry, against: str | None = None, *, renames=None, rules=None,
            source: str = "", yanked: bool | None = False) -> GateReport:
    """Classify every change between the candidate's facts and registry release ``against`` (default: newest)."""
    against = resolve_against(reg, against)
    changes = config_changes(facts, reg, against, renames, rules)
    label = f"{Path(source).name} (version unknown)" if not facts["version"] else facts["version"]
    report = GateReport(label, source, facts["kind"], against, changes, facts, yanked)
    claimed = claimed_release(reg, facts["version"])
    if claimed is not None:
        twin = changes if claimed == against else config_changes(facts, reg, claimed, renames, rules)
        report.label = label_record(claimed, twin)
        if twin and claimed != against:  # a mislabelled build must not pass as the release it names
            report.changes.insert(0, Change(
                DECISION, "label", "(version)", f"registry {claimed}", f"{len(twin)} differences",
                f"claims to be {claimed} but its config differs from the registry's {claimed}: it is not that "
                f"release; --accept refuses it without --replace", "(package)",
                [f"differs: {line}" for line in report.label["shown"]]))
    return report


def config_changes(facts: dict, reg: Registry, against: str, renames=None, rules=None) -> list[Change]:
    """Every config change between the candidate's facts and registry release ``against``, sorted by level.

    ``renames`` (config key -> renames table) and ``rules`` (rules.json's shape) replace the committed ones."""
    rules = rules if rules is not None else registry_rules()
    version = facts["version"]
    changes = []
    for key, config in CONFIGS.items():
        if not reg.has(against, config=key):
            if key in facts:
                changes.append(Change(INFO, "new class", config.class_name, None, config.path,
                                      f"new in this release: after --accept the shim builds {config.class_name} for it",
                                      config.class_name))
            continue
        if key not in facts:
            changes.append(missing_class(reg, key, against))
            continue
        cand = schema_from_snapshot(version or "candidate", "candidate", facts[key], config=key)
        table = (renames or {}).get(key)
        table = list(registry_renames(config=key)) if table is None else table
        changes += diff_config(key, reg.schema(against, config=key), cand, version, renames=table, rules=rules)
    rank, configs = {level: i for i, level in enumerate(LEVELS)}, order()
    changes.sort(key=lambda c: (rank[c.level], configs.index(c.config) if c.config in configs else len(configs)))
    return changes


def missing_class(reg: Registry, key: str, against: str) -> Change:
    """A class the compared release has and the candidate lacks: breaking (code written for ``against`` that builds
    it cannot run on the candidate), whether every registry release has it (a file missing, a class renamed) or only
    some did (AdamOptimizerConfig, 0.16-0.17)."""
    config = CONFIGS[key]
    having = reg.versions_having(key)
    everywhere = len(having) == len(reg.versions())
    where = "every registry release" if everywhere else f"registry releases {having[0]}..{having[-1]}"
    return Change(BREAKING, "missing", config.class_name, config.path, None,
                  f"{where} define {config.class_name}: code that builds it, and the shim's "
                  f"{config.key!r} config, cannot work on this candidate; find where the class moved or was renamed",
                  config.class_name)


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
         dest: Path | None = None, pinned: list[str] | None = None) -> GateReport:
    """Locate (download) CANDIDATE, extract it with ast and compare it with the registry.

    Without ``against``, a candidate that is a registry release (same config) is compared with the pin before it
    among ``pinned`` (matrix.yaml's versions, which the matrix tools pass): comparing a release with itself says
    nothing."""
    reg = reg if reg is not None else load_registry()
    path, yanked = locate(str(candidate), dest)
    facts = read_candidate(path)
    report = compare(facts, reg, against, renames=renames, rules=rules, source=str(candidate), yanked=yanked)
    if against is None and report.label and not report.label["differs"]:
        before = previous_pin(report.label["claims"], pinned, reg.versions())
        if before is not None:
            report = compare(facts, reg, before, renames=renames, rules=rules, source=str(candidate), yanked=yanked)
            where = ("in matrix.yaml" if pinned is not None else
                     "(the newest release of the minor series before it, as matrix.yaml pins)")
            report.baseline = (f"{report.label['claims']} is already in the registry (same config); compared with "
                               f"{before}, the pin before it {where}: what adopting it means for a project "
                               f"on {before}")
    from .sections import add_sections

    add_sections(report, path, reg)
    return report


def load_registry(path: Path | None = None) -> Registry:
    """A registry file, read bounded and shape-checked (``RegistryFileError``, exit 3, when malformed)."""
    from .registry_file import read_registry

    return Registry(read_registry(Path(path) if path else DEFAULT_REGISTRY)[0])
