"""Plain-install check of a pin (the smoke-<version> nox sessions): install megatron-core==V exactly as its metadata
says (its declared dependencies, no extras, the matrix's CPU torch), import megatron.core and the modules the contract
tests use, and compare what happened with the recorded outcome in compat/tooling/data/install.json.

A change either way fails the session: a new failure, and also a failure that went away (update the data with
``nox -s smoke-V -- --record``). Where Requires-Python excludes the session's Python the install uses the override
the matrix uses (pip --ignore-requires-python, with dependencies) and the outcome records that it is one.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from compat.tooling.fsutil import atomic_write_text  # noqa: E402
from tools.results import RECORDED, results_dir_for  # noqa: E402

DATA = ROOT / "compat" / "tooling" / "data" / "install.json"
PROBE = ROOT / "tests" / "smoke" / "probe.py"
OVERRIDE = "pip --ignore-requires-python (the matrix's override)"
INSTALL_TIMEOUT_S = 1800
MAX_ROUNDS = 6  # undeclared imports found one at a time (an import stops at the first missing module)
PROVIDERS = {"pkg_resources": "setuptools<81", "yaml": "pyyaml", "PIL": "pillow", "sklearn": "scikit-learn"}
NOT_FROM_THE_INDEX = {"apex", "transformer_engine"}  # NVIDIA builds from source; PyPI's "apex" is another project
_UNRESOLVABLE = re.compile(r"no solution found|resolutionimpossible|could not find a version|no matching distribution"
                           r"|conflicting dependencies|unsatisfiable", re.IGNORECASE)
_BUILD = re.compile(r"failed to build|build backend|metadata-generation-failed|setup\.py", re.IGNORECASE)
_BUILT = re.compile(r"(?:╰─>|Failed to build|Failed to build `?)\s*`?([A-Za-z0-9._-]+)")  # the package pip/uv built
_WHY = re.compile(r"(requires Python version [^\n]+|requires-python[^\n]+)", re.IGNORECASE)


def load(path: Path = DATA) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != 1 or not isinstance(data.get("modules"), list) or not isinstance(data.get("pins"), dict):
        raise ValueError(f"{path}: expected {{'format': 1, 'modules': [...], 'pins': {{...}}}}")
    return data


def install_cause(returncode: int, output: str) -> str:
    """ "ok", or why the installer failed, with the installer's most telling line."""
    if returncode == 0:
        return "ok"
    lines = [" ".join(line.split()) for line in output.splitlines() if line.strip()]
    telling = next((line for line in lines if _UNRESOLVABLE.search(line)), None) or \
        next((line for line in lines if "error" in line.lower()), lines[-1] if lines else f"exit {returncode}")
    if not _UNRESOLVABLE.search(output) and _BUILD.search(output):
        built = _BUILT.search(output)
        why = _WHY.search(output)
        subject = f"{built.group(1)} (from source)" if built else "a dependency from source"
        return f"build failure: {subject}" + (f": {' '.join(why.group(1).split())[:200]}" if why else
                                                f": {telling[:200]}")
    kind = "unresolvable requirement" if _UNRESOLVABLE.search(output) else "install failure"
    return f"{kind}: {telling[:300]}"


def outcome_key(value: str) -> str:
    """What must stay the same between runs: the cause and its subject, not the wording of a message.

    "undeclared import: numpy" stays whole; "import error: TypeError: ..." keeps "import error: TypeError";
    "unresolvable requirement: ..." keeps the cause only (the resolver's wording changes between installer versions);
    "build failure: numpy (from source): ..." keeps the package built.
    """
    if value == "ok" or value.startswith("undeclared import:"):
        return value
    if value.startswith("build failure:"):
        return value.split(":", 2)[0] + ":" + value.split(":", 2)[1] if value.count(":") >= 1 else value
    head, _, rest = value.partition(": ")
    if head in ("import error", "CPU-only import error"):
        return f"{head}: {rest.split(':', 1)[0]}"
    return head


def differences(expected: dict | None, observed: dict) -> list[str]:
    """Each way the observed outcome differs from the recorded one (empty: as recorded)."""
    if expected is None:
        return ["no recorded outcome for this pin (run with --record)"]
    out = []
    for key in ("override", "install", "undeclared"):
        want, got = expected.get(key), observed.get(key)
        if (outcome_key(want) if isinstance(want, str) else want) != \
                (outcome_key(got) if isinstance(got, str) else got):
            out.append(f"{key}: recorded {want!r}, now {got!r}")
    want_imports, got_imports = expected.get("imports", {}), observed.get("imports", {})
    for module in sorted(set(want_imports) | set(got_imports)):
        want, got = want_imports.get(module), got_imports.get(module)
        if want is None or got is None or outcome_key(want) != outcome_key(got):
            out.append(f"import {module}: recorded {want!r}, now {got!r}")
    return out


def python_excluded(requires_python: str | None, python: str) -> bool:
    if not requires_python:
        return False
    from packaging.specifiers import SpecifierSet

    return not SpecifierSet(requires_python).contains(f"{python}.0", prereleases=True)


def _run(cmd: list[str], *, stdout_only: bool = False) -> tuple[int, str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return 124, f"error: timed out after {INSTALL_TIMEOUT_S} s"
    return done.returncode, done.stdout if stdout_only else done.stdout + done.stderr


def _probe(python_exe: str, modules: list[str]) -> dict[str, str]:
    code, output = _run([python_exe, str(PROBE), *modules], stdout_only=True)
    try:
        return json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {m: f"import error: probe failed: {' '.join(output.split())[-300:]}" for m in modules}


def _missing(imports: dict[str, str]) -> list[str]:
    return sorted({v.split(": ", 1)[1] for v in imports.values() if v.startswith("undeclared import: ")})


def _undeclared(python_exe: str, uv: str, index_args: list[str], modules: list[str],
                first: dict) -> tuple[list[str], dict[str, str]]:
    """Every module the release imports without declaring it, and the imports once they are installed: install
    what the last probe found missing (its provider), probe again, until nothing new is missing. The plain result
    stays ``imports``."""
    found: list[str] = []
    imports = first
    for _ in range(MAX_ROUNDS):
        new = [m for m in _missing(imports) if m not in found]
        if not new:
            break
        found += new
        installable = [PROVIDERS.get(m, m) for m in new if m not in NOT_FROM_THE_INDEX]
        if not installable:
            break
        code, _out = _run([uv, "pip", "install", "--python", python_exe, *index_args, *installable])
        if code != 0:
            break
        imports = _probe(python_exe, modules)
    return found, imports


def run(pin, *, python_exe: str, uv: str, index_args: list[str], requires_python: str | None,
        record: bool = False, log=print) -> list[str]:
    """Install, import, write smoke/<version>.json (tools/results.py: tracked with ``record``); the differences
    from install.json."""
    data = load()
    started = time.monotonic()
    override = OVERRIDE if python_excluded(requires_python, pin.python) else None
    wanted = [f"torch=={pin.torch}", f"megatron-core=={pin.version}"]
    if override:
        code, output = _run([uv, "pip", "install", "--python", python_exe, *index_args, "pip"])
        if code == 0:
            code, output = _run([python_exe, "-m", "pip", "install", "--disable-pip-version-check",
                                 "--ignore-requires-python", *wanted])
    else:
        code, output = _run([uv, "pip", "install", "--python", python_exe, *index_args, *wanted])
    observed = {"python": pin.python, "torch": pin.torch, "requires_python": requires_python, "override": override,
                "install": install_cause(code, output)}
    observed["imports"], observed["undeclared"], observed["imports_with_undeclared"] = {}, [], {}
    if code == 0:
        observed["imports"] = _probe(python_exe, data["modules"])
        observed["undeclared"], observed["imports_with_undeclared"] = _undeclared(
            python_exe, uv, index_args, data["modules"], observed["imports"])
    observed["seconds"] = round(time.monotonic() - started, 1)
    observed["measured"] = time.strftime("%Y-%m-%d", time.gmtime())
    results = results_dir_for(record) / "smoke"
    results.mkdir(parents=True, exist_ok=True)
    atomic_write_text(results / f"{pin.version}.json", json.dumps(observed, indent=1, sort_keys=True) + "\n")
    log(f"smoke-{pin.version}: install {observed['install']}; undeclared {observed['undeclared']}; " +
        "; ".join(f"{m} {v}" for m, v in observed["imports_with_undeclared"].items() if v != "ok"))
    if record:
        data["pins"][pin.version] = {k: observed[k] for k in ("python", "torch", "override", "install", "imports",
                                                              "undeclared", "imports_with_undeclared", "measured")}
        atomic_write_text(DATA, json.dumps(data, indent=1, sort_keys=True) + "\n")
        return []
    return differences(data["pins"].get(pin.version), observed)


def summary(data: dict | None = None) -> str:
    """benchmarks/results/smoke.md: one row per pin, from compat/tooling/data/install.json."""
    data = data or load()
    rows = ["# Plain install per pin (smoke-<version> sessions)", "",
            "Reproduce: `nox -s smoke-<version> -- --record` per pin, then `python -m tools.smoke summary`.", "",
            "`pip install megatron-core==X` with its declared dependencies, no extras, the matrix's CPU torch, in a "
            "fresh venv on the pin's Python; then `import` of the modules the contract tests use "
            f"({', '.join(f'`{m}`' for m in data['modules'])}). Undeclared imports are installed one round at a time "
            "and probed again. Raw results: `benchmarks/results/smoke/<version>.json`; expected outcomes: "
            "`compat/tooling/data/install.json`.", "",
            "| pin | Python | override | install | imports (plain) | undeclared imports | still failing with them |",
            "|---|---|---|---|---|---|---|"]
    from compat import version as _v

    for version in _v.sorted_versions(list(data["pins"])):
        rec = data["pins"][version]
        plain = rec.get("imports") or {}
        bad = sorted({v for v in plain.values() if v != "ok"})
        after = sorted(m for m, v in (rec.get("imports_with_undeclared") or {}).items() if v != "ok")
        rows.append(f"| {version} | {rec['python']} | {'yes: ' + rec['override'] if rec.get('override') else 'no'} "
                    f"| {rec['install']} | {'all ok' if plain and not bad else '; '.join(bad) or '—'} "
                    f"| {', '.join(rec.get('undeclared') or []) or '—'} | {', '.join(after) or '—'} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # python -m tools.smoke summary
    if sys.argv[1:] == ["summary"]:
        atomic_write_text(RECORDED / "smoke.md", summary())
        print(RECORDED / "smoke.md")
    else:
        sys.exit("usage: python -m tools.smoke summary   (the sessions themselves: nox -s smoke-<version>)")
