"""Every finding of the surface gate on three real projects against three releases, as one JSON file: the
behaviour a speed change must keep. Run it before and after, then compare the two files (``--compare``).

    python -m benchmarks.surface_findings_snapshot --out before.json [--mirror DIR] [--cache DIR]
    python -m benchmarks.surface_findings_snapshot --compare before.json after.json

The projects are exported from the fetched snapshots into a temporary directory (NeMo 8cfedd7203, NeMo-RL
7ea279abf, Pai-Megatron-Patch a098ca5); the releases are 0.15.3, 0.17.1 and 0.19.2. Each finding is recorded with
its path, line, kind, name, guarded, guard reason, instead and further lines; the scan's counts too. ``--cache``: a
cache directory of this run's own (``MCORE_COMPAT_CACHE``), its wheels linked from the user's wheel cache and every
release modelled first, so that the history column does not depend on which releases other runs modelled.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from compat.tooling.gate.surface.cache import cached_wheels, release_models  # noqa: E402
from compat.tooling.gate.surface.release_gate import surface_gate  # noqa: E402
from tools.git_snapshots import add_mirror_option, export, git_dir, mirror_root  # noqa: E402

PROJECTS = (("NVIDIA/NeMo", "8cfedd7203"), ("NVIDIA-NeMo/RL", "7ea279abf"),
            ("alibaba/Pai-Megatron-Patch", "a098ca5"))
RELEASES = ("0.15.3", "0.17.1", "0.19.2")
FIELDS = ("path", "line", "kind", "name", "guarded", "guard", "instead", "use", "also_at", "close")


def private_cache(directory: Path) -> None:
    """Use ``directory`` as the cache: the user's cached wheels linked into it, every release modelled."""
    wheels = cached_wheels()
    (directory / "wheels").mkdir(parents=True, exist_ok=True)
    for wheel in wheels.values():
        target = directory / "wheels" / wheel.name
        if not target.exists():
            try:
                os.link(wheel, target)
            except OSError:
                shutil.copy2(wheel, target)
    os.environ["MCORE_COMPAT_CACHE"] = str(directory)
    release_models()


def snapshot(mirror: Path, projects=PROJECTS) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="surface-snapshot-") as tmp:
        for repo, rev in projects:
            project = Path(tmp) / repo.replace("/", "+")
            export(git_dir(mirror, repo), rev, project)
            for release in RELEASES:
                report = surface_gate(release, project)
                scan = report.scan
                out[f"{repo}@{rev} vs {release}"] = {
                    "scan": {"files": scan.files, "megatron_files": scan.megatron_files, "uses": len(scan.uses),
                             "skipped": sorted(map(list, scan.skipped)), "sets": sorted(scan.sets)},
                    "exit_code": report.exit_code,
                    "findings": [{k: getattr(f, k) for k in FIELDS} for f in report.findings]}
    return out


def compare(before: dict, after: dict) -> int:
    differences = 0
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        if a is None or b is None:
            print(f"{key}: only in {'after' if a is None else 'before'}")
            differences += 1
            continue
        if a["scan"] != b["scan"]:
            print(f"{key}: scan {a['scan'] if len(str(a['scan'])) < 300 else '...'} -> "
                  f"{b['scan'] if len(str(b['scan'])) < 300 else '...'}")
            differences += 1
        old = {json.dumps(f, sort_keys=True) for f in a["findings"]}
        new = {json.dumps(f, sort_keys=True) for f in b["findings"]}
        for line in sorted(old - new):
            print(f"{key}: - {line}")
        for line in sorted(new - old):
            print(f"{key}: + {line}")
        differences += len(old ^ new) + (a["exit_code"] != b["exit_code"])
        if old == new and a["findings"] != b["findings"]:
            print(f"{key}: same findings in another order")
            differences += 1
    print(f"{differences} differences")
    return 1 if differences else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_mirror_option(parser)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, help="a cache directory of this run's own (see above)")
    parser.add_argument("--project", action="append", metavar="OWNER/NAME@REV",
                        help="these projects instead of the three above (repeatable)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        return compare(*(json.loads(p.read_text()) for p in args.compare))
    if not args.out:
        parser.error("--out or --compare is required")
    if args.cache:
        private_cache(args.cache)
    projects = [tuple(p.split("@", 1)) for p in args.project] if args.project else PROJECTS
    result = snapshot(mirror_root(args.mirror), projects)
    args.out.write_text(json.dumps(result, indent=0, sort_keys=True, default=list) + "\n")
    print(f"{sum(len(v['findings']) for v in result.values())} findings in {len(result)} runs -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
