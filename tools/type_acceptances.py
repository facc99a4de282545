"""Write ``compat/data/type_acceptances.json``: values outside a field's annotation that a release reads as meant.

For every release in the registry, from its wheel (``compat.tooling.fetch`` cache), the reads of every config field are
classified statically (``tools/field_reads.py``). Two shapes are derived, each with its evidence:

- ``none``: None for a field whose annotation does not allow it, where every read of the field is by truthiness,
  ``is None``, ``==`` against constants, inside a branch guarded by ``is not None``, in a message, or passed on to
  a parameter read only in those ways (and there is at least one read). The value is kept as given.
- ``false_as_none``: False for a field that is None or a non-empty str (``fp8``) that the release reads by
  truthiness: False and None read alike there, but ``is None`` reads would take False for "on", so the value is
  sent as None, the release's spelling of "off".

Usage: ``python -m tools.type_acceptances [--out PATH]`` (downloads the wheels it lacks).
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from compat import registry_format
from compat.configs import CONFIGS, lineage
from compat.registry import registry
from compat.tooling import fetch
from compat.tooling.fsutil import atomic_write_text
from tools.field_reads import SAFE_FOR_NONE, Package, field_reads

OUT = Path(__file__).resolve().parents[1] / "compat" / "data" / "type_acceptances.json"
CONFIG_FILES = {c.path for c in CONFIGS.values()} | {"megatron/core/model_parallel_config.py"}
EXAMPLES = 4


def _flag_like(field) -> bool:
    """None means off and every other value is a non-empty str (``fp8: Optional[Literal['e4m3', 'hybrid']]``,
    ``fp8: str = None`` before 0.16)."""
    spec = field.type
    others = [m for m in spec.members if m.kind != "None"]
    return (spec.optional or field.default is None) and bool(others) and all(
        m.kind == "str" or m.kind == "literal" and all(isinstance(v, str) and v for v in m.args) for m in others)


def shapes_of(field, reads) -> list[str]:
    kinds = {r.kind for r in reads}
    if not reads:
        return []
    out = []
    if not field.type.optional and field.default is not None and kinds <= SAFE_FOR_NONE:
        out.append("none")
    if _flag_like(field) and "truthy" in kinds:
        out.append("false_as_none")
    return out


def evidence(version: str, reads) -> dict:
    counts = Counter(r.kind for r in reads)
    wanted = [r for r in reads if r.kind in ("truthy", "is_none", "guarded", "passed")]
    return {"release": version, "reads": dict(sorted(counts.items())),
            "examples": [r.where() for r in sorted(wanted, key=lambda r: (r.kind, r.path, r.line))[:EXAMPLES]]}


def release_acceptances(version: str, wheel: Path) -> dict[tuple[str, str, str], dict]:
    reg = registry()
    pkg = Package(str(wheel))
    out = {}
    for config in CONFIGS:
        if not reg.has(version, config=config):
            continue
        inherited = {n for base in lineage(config)[1:] if reg.has(version, config=base)
                     for n in reg.schema(version, config=base).names}
        fields = [f for f in reg.fields_of(version, config=config) if f.name not in inherited]
        reads = field_reads(pkg, {f.name for f in fields}, CONFIG_FILES)
        for f in fields:
            for shape in shapes_of(f, reads.get(f.name, [])):
                out[(config, f.name, shape)] = evidence(version, reads[f.name])
    return out


def build(log=print) -> dict:
    reg = registry()
    found: dict[tuple[str, str, str], dict] = {}
    for version in reg.versions():
        wheel = fetch.download(registry_format.PACKAGE, version)
        for key, ev in release_acceptances(version, wheel).items():
            entry = found.setdefault(key, {"releases": []})
            entry["releases"].append(version)
            entry["evidence"] = ev  # the newest release's reads
        log(f"{version}: {sum(1 for e in found.values() if e['releases'][-1] == version)} acceptances")
    rows = [{"config": c, "field": n, "shape": s, **found[(c, n, s)]} for c, n, s in sorted(found)]
    return {"format": 1, "source": "release wheels, reads classified with ast by tools/field_reads.py",
            "shapes": {"none": "None accepted and kept: every read is by truthiness, is None, == constants, "
                               "a guarded branch or a message",
                       "false_as_none": "False accepted and sent as None: an Optional flag-like Literal read by "
                                        "truthiness"},
            "acceptances": rows}


def dumps(data: dict) -> str:
    head = {k: v for k, v in data.items() if k != "acceptances"}
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in data["acceptances"])
    return json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "acceptances": [\n' + body + "\n ]\n}\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    data = build()
    atomic_write_text(args.out, dumps(data))
    print(f"wrote {args.out}: {len(data['acceptances'])} acceptances")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
