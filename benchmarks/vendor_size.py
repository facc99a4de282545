"""What ``vendor`` copies into a host: files, Python modules and lines, bytes (code, data, the rest), at this
checkout and at a git revision (``--ref main``: that revision's own ``vendor``, from a ``git archive`` of it).

    python -m benchmarks.vendor_size --ref ab90411    -> benchmarks/results/vendor_size.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "vendor_size.json"


def measure(copy: Path) -> dict:
    files = sorted(p for p in copy.rglob("*") if p.is_file())
    py = [p for p in files if p.suffix == ".py"]
    data = [p for p in files if p.suffix == ".json" and p.name != "VENDORED.json"]
    size = lambda paths: sum(p.stat().st_size for p in paths)  # noqa: E731
    return {"files": len(files), "modules": len(py),
            "python_lines": sum(len(p.read_bytes().splitlines()) for p in py),
            "bytes": size(files), "code_bytes": size(py), "data_bytes": size(data),
            "other_bytes": size(files) - size(py) - size(data),
            "modules_list": sorted(p.relative_to(copy).as_posix() for p in py)}


def vendor_from(checkout: Path, work: Path) -> dict:
    host = work / "host" / "_vendor"
    host.mkdir(parents=True)
    (work / "host" / "__init__.py").write_text("")
    (host / "__init__.py").write_text("")
    subprocess.run([sys.executable, "-m", "compat", "vendor", str(host / "mcore_compat")], cwd=checkout, check=True,
                   capture_output=True, text=True)
    return measure(host / "mcore_compat")


def at_ref(ref: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        commit = subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout.strip()
        return {"ref": ref, "commit": commit, **vendor_from(tree, Path(tmp) / "out")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="main", help="the revision to compare with (its own vendor command)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        now = {"ref": "this checkout", **vendor_from(ROOT, Path(tmp))}
    before = at_ref(args.ref)
    result = {"what": "the files `python -m compat vendor DEST` writes into DEST, VENDORED.json and LICENSE included",
              "before": before, "after": now}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    for label, r in (("before", before), ("after", now)):
        print(f"{label:6} {r['ref']:14} {r['files']:3} files, {r['modules']:2} modules, {r['python_lines']:6} lines, "
              f"{r['bytes']:8} bytes ({r['code_bytes']} code, {r['data_bytes']} data)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
