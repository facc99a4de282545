"""Hostile candidates and projects for the surface gate: each
builder writes a tiny wheel (kilobytes) and a tiny project whose cost used to grow exponentially or quadratically,
and returns the CLI arguments. Used by ``test_hostile_inputs.py`` (exit code, one stderr line, peak memory) and by
``benchmarks/surface_hostile.py`` (``/usr/bin/time -v``)."""
from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

from compat.tooling.pysource import MAX_FILE_TOKENS

UTILS = "def unwrap_model(model):\n    return model\n"
_BASE = {"megatron/core/__init__.py": "", "megatron/core/utils.py": UTILS}


def wheel(directory: Path, files: dict, version: str = "0.20.0") -> Path:
    """A megatron-core wheel holding ``files`` (path -> text or bytes) next to a minimal package."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"megatron_core-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"megatron_core-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: megatron-core\nVersion: {version}\n")
        for name, body in {**_BASE, **files}.items():
            z.writestr(name, body)
    return path


def project(directory: Path, source: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "train.py").write_text(source)
    return directory


def release_cache(cache: Path, count: int = 3) -> dict:
    """``count`` plain releases in a wheel cache, so that every finding's history is computed against them; returns
    the environment that points the CLI at that cache with no index."""
    for minor in range(1, count + 1):
        wheel(cache / "wheels", {}, version=f"0.{minor}.0")
    return {"MCORE_COMPAT_CACHE": str(cache), "MCORE_COMPAT_INDEX_URL": "http://127.0.0.1:9/simple"}


def _gate(tmp: Path, files: dict, use: str, releases: int = 0) -> dict:
    env = release_cache(tmp / "cache", releases) if releases else {
        "MCORE_COMPAT_CACHE": str(tmp / "cache"), "MCORE_COMPAT_INDEX_URL": "http://127.0.0.1:9/simple"}
    args = ["gate", wheel(tmp / "candidate", files), "--project", project(tmp / "project", use)]
    return {"args": args, "env": env}


# ---- lookups that used to take a path each ---------------------------------------------------------------------------
def star_dag(tmp: Path, layers: int = 40) -> dict:
    """Each module of a layer star-imports both modules of the next: 2**layers paths to the bottom, 2*layers modules.
    The name asked for is bound nowhere: a missing name (exit 1)."""
    files = {"megatron/core/dag/__init__.py": ""}
    for k in range(layers):
        for side in "ab":
            body = f"from .l{k + 1}a import *\nfrom .l{k + 1}b import *\n" if k < layers - 1 else "present = 1\n"
            files[f"megatron/core/dag/l{k}{side}.py"] = body
    return _gate(tmp, files, "from megatron.core.dag.l0a import absent\nfrom megatron.core.dag.l0b import present\n")


def class_lattice(tmp: Path, levels: int = 30) -> dict:
    """Both classes of a level derive from both of the next: 2**levels paths up the hierarchy. An attribute no
    class has (exit 1), a call that needs the MRO and the enum test, a member of the top class that resolves."""
    lines = [f"class C{levels}a:\n    top = 1\n", f"class C{levels}b:\n    pass\n"]
    for k in range(levels - 1, -1, -1):
        lines += [f"class C{k}{side}(C{k + 1}a, C{k + 1}b):\n    pass\n" for side in "ab"]
    use = "from megatron.core.lattice import C0a\nC0a.absent\nC0a.top\nC0a(1)\n"
    return _gate(tmp, {"megatron/core/lattice.py": "".join(lines)}, use)


# ---- chains thousands deep (RecursionError before) -------------------------------------------------------------------
def reexport_chain(tmp: Path, length: int = 3000) -> dict:
    """``m0`` re-exports X from ``m1`` ... from ``m{length-1}``, which defines ``X(a)``; the project calls X with a
    keyword it lacks: found through the whole chain (exit 1), not given up as unknown."""
    files = {f"megatron/core/chain/m{i}.py": f"from .m{i + 1} import X\n" for i in range(length - 1)}
    files[f"megatron/core/chain/m{length - 1}.py"] = "def X(a):\n    return a\n"
    files["megatron/core/chain/__init__.py"] = ""
    return _gate(tmp, files, "from megatron.core.chain.m0 import X\nX(b=1)\n")


def star_chain(tmp: Path, length: int = 3000) -> dict:
    files = {f"megatron/core/stars/s{i}.py": f"from .s{i + 1} import *\n" for i in range(length - 1)}
    files[f"megatron/core/stars/s{length - 1}.py"] = "deep = 1\n"
    files["megatron/core/stars/__init__.py"] = ""
    return _gate(tmp, files, "from megatron.core.stars.s0 import deep, shallow\n")


def class_chain(tmp: Path, length: int = 3000) -> dict:
    lines = [f"class K{length - 1}:\n    root = 1\n"]
    lines += [f"class K{i}(K{i + 1}):\n    pass\n" for i in range(length - 2, -1, -1)]
    use = "from megatron.core.kchain import K0\nK0.root\nK0.absent\nK0(1)\n"
    return _gate(tmp, {"megatron/core/kchain.py": "".join(lines)}, use)


# ---- one call with many unknown keywords -----------------------------------------------------------------------------
def many_keywords(tmp: Path, count: int = 1000, releases: int = 3) -> dict:
    """One call of ``unwrap_model`` with ``count`` keywords it does not take: ``count`` findings, each with its
    history on ``releases`` releases (exit 1)."""
    keywords = ", ".join(f"k{i}=0" for i in range(count))
    return _gate(tmp, {}, f"from megatron.core.utils import unwrap_model\nunwrap_model(None, {keywords})\n", releases)


def many_lines(tmp: Path, count: int = 100_000) -> dict:
    """A name the candidate lacks, imported once and called on ``count`` lines: one finding that lists the other
    lines (``also_at``), built in time linear in the lines."""
    return _gate(tmp, {}, "from megatron.core.utils import absent\n" + "absent()\n" * count)


# ---- what the model reads --------------------------------------------------------------------------------------------
def deep_member(tmp: Path, depth: int = 30_000) -> dict:
    """One member 30,000 directories deep (a 60 kB name): module names used to be built for every prefix."""
    files = {"megatron/core/" + "d/" * depth + "x.py": "X = 1\n"}
    return _gate(tmp, files, "from megatron.core.utils import unwrap_model\n")


def _dense(size: int) -> str:
    """Python of ``size`` bytes that is one long list display: about one token per byte."""
    return "X = [" + "1," * ((size - 16) // 2) + "]\nY = 1\n"


def dense_source(tmp: Path, size: int = (8 << 20) - 64) -> dict:
    """One source member just under the 8 MiB member cap that is one long expression (compresses to kilobytes;
    parsing it whole took 3.4 GB). It is over the per-file parse cap: listed as unparsed, its names accepted."""
    return _gate(tmp, {"megatron/core/dense.py": _dense(size)}, "from megatron.core.dense import Y\nY.anything\n")


def dense_at_file_caps(tmp: Path) -> dict:
    """A file just under the per-file token cap: parsed, the densest a parsed file can be."""
    return _gate(tmp, {"megatron/core/dense.py": _dense(MAX_FILE_TOKENS - 10)}, "from megatron.core.dense import Y, Z\n")


def dense_past_budget(tmp: Path, files: int = 30) -> dict:
    """``files`` files each just under the per-file token cap: together past the node budget of one candidate
    (exit 3), each parsed and dropped in turn."""
    body = _dense(MAX_FILE_TOKENS - 10)
    return _gate(tmp, {f"megatron/core/dense{i}.py": body for i in range(files)}, "import megatron.core\n")


CASES: dict[str, Callable[[Path], dict]] = {
    "star-import-dag-40-layers": star_dag,
    "class-lattice-30-levels": class_lattice,
    "reexport-chain-3000-modules": reexport_chain,
    "star-import-chain-3000-modules": star_chain,
    "class-chain-3000-deep": class_chain,
    "call-with-1000-unknown-keywords": many_keywords,
    "call-with-100000-unknown-keywords": lambda tmp: many_keywords(tmp, 100_000),
    "missing-name-used-on-100000-lines": many_lines,
    "member-30000-directories-deep": deep_member,
    "dense-8-mib-source-member": dense_source,
    "dense-source-at-the-file-caps": dense_at_file_caps,
    "dense-sources-past-the-candidate-budget": dense_past_budget,
}
