"""Golden findings of the surface gate: small projects of our own, each with a candidate megatron-core tree, and the
findings the gate reports on them (tests/surface/golden/<case>/expected.json).

    python -m tools.golden_findings [--write] [CASE ...]   # every case when none is named

Prints, for each case, how today's findings differ from its expected.json; exit 1 when any differs. ``--write``
rewrites expected.json instead (name the golden change and why in the commit). A case directory holds
``case.json`` (``family``: the rule family it exercises, ``why``: one sentence; optional ``wheel``: the candidate and
the previous release are packed as wheels, as a wheel "not shipped" needs), ``candidate/`` (a megatron tree whose
``megatron/core/package_info.py`` gives its version), optionally ``previous/`` (the release before, the same shape),
and ``project/`` (the project's own files). The gate runs in-process, as a run whose cache holds both releases does:
the previous release is the override check's baseline, and the history column sees both.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from compat import version as _v
from compat.tooling.fsutil import atomic_write_text
from compat.tooling.gate.surface.cache import model_for
from compat.tooling.gate.surface.lookup import Surface
from compat.tooling.gate.surface.project import scan_project
from compat.tooling.gate.surface.release_gate import check_model

CASES_DIR = Path(__file__).resolve().parents[1] / "tests" / "surface" / "golden"
REQUIRED = ("case.json", "candidate", "project", "expected.json")
# every Finding field that says what the gate found, in this order (on_against: always None without --against)
FIELDS = ("path", "line", "name", "kind", "rule", "guarded", "guard", "use", "instead", "close", "history", "also_at")


def case_names() -> list[str]:
    return sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def meta(case: Path) -> dict:
    return json.loads((case / "case.json").read_text(encoding="utf-8"))


def _pack(tree: Path, directory: Path) -> Path:
    """``tree`` as a release wheel in ``directory`` (named by the version its package_info.py gives)."""
    version = model_for(tree)["version"]
    path = directory / f"megatron_core-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"megatron_core-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: megatron-core\nVersion: {version}\n")
        for file in sorted(p for p in tree.rglob("*") if p.is_file()):
            z.writestr(file.relative_to(tree).as_posix(), file.read_bytes())
    return path


def run_case(case: Path) -> list[dict]:
    """Today's findings on ``case``, sorted, each with FIELDS. A ``wheel`` case writes the models of its wheels to
    the surface cache ($MCORE_COMPAT_CACHE): the tests isolate it, main() points it at a temporary directory."""
    trees = [case / "candidate"] + ([case / "previous"] if (case / "previous").is_dir() else [])
    with tempfile.TemporaryDirectory() as scratch:
        sources = [_pack(tree, Path(scratch)) for tree in trees] if meta(case).get("wheel") else trees
        models = [model_for(source) for source in sources]
        candidate = models[0]
        releases = {m["version"]: Surface(m) for m in models}
        releases = {v: releases[v] for v in _v.sorted_versions(releases)}
        scan = scan_project(case / "project", cache=False)
        report = check_model(scan, candidate, "candidate", releases=releases)
        found = [{k: f.to_dict()[k] for k in FIELDS} for f in report.findings]
    return sorted(found, key=lambda f: (f["path"], f["line"], f["name"], f["kind"]))


def expected(case: Path) -> list[dict]:
    return json.loads((case / "expected.json").read_text(encoding="utf-8"))


def render(findings: list[dict]) -> str:
    return json.dumps(findings, indent=1, sort_keys=False) + "\n"


def differences(want: list[dict], got: list[dict]) -> list[str]:
    """A unified diff of the expected findings against today's, one finding a line ([] when they agree)."""
    def lines(items: list[dict]) -> list[str]:
        return [json.dumps(item, sort_keys=True) for item in items]
    return list(difflib.unified_diff(lines(want), lines(got), "expected.json", "today", lineterm="", n=1))


@contextlib.contextmanager
def isolated_cache() -> Iterator[None]:
    """The wheel and model caches and the cache key in a temporary directory, for the duration."""
    saved = {name: os.environ.get(name) for name in ("MCORE_COMPAT_CACHE", "MCORE_COMPAT_STATE")}
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["MCORE_COMPAT_CACHE"] = str(Path(scratch) / "cache")
        os.environ["MCORE_COMPAT_STATE"] = str(Path(scratch) / "state")
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite expected.json with today's findings")
    parser.add_argument("cases", nargs="*", metavar="CASE", help="case directory names (default: all)")
    args = parser.parse_args(argv)
    known = case_names()
    unknown = [name for name in args.cases if name not in known]
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)} (known: {', '.join(known)})")
    differing = 0
    with isolated_cache():
        for name in args.cases or known:
            case = CASES_DIR / name
            got = run_case(case)
            if args.write:
                atomic_write_text(case / "expected.json", render(got))
                print(f"{name}: {len(got)} findings written")
                continue
            diff = differences(expected(case) if (case / "expected.json").is_file() else [], got)
            if diff:
                differing += 1
                print(f"{name}:\n" + "\n".join(diff))
    if not args.write:
        print(f"{differing} of {len(args.cases or known)} cases differ" if differing else "every case agrees")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
