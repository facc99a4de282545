"""Real installs for the companion window (the companions-<version> nox sessions): into a venv holding a pin's
megatron-core and torch, install each chosen release of a companion as a user would (its declared dependencies,
with the pin's torch and megatron-core held by constraints), import every module of it that uses megatron (the
surface gate's scan of the same wheel says which), and record the outcome per (release, pin).

Outcomes: ``ok`` (every such module imports), ``fails`` (an import fails on megatron: a module or name the pin
lacks), ``cannot-run`` (an import fails on something else: a dependency that needs CUDA, one it does not declare),
``cannot-install`` (the resolver or a build refused; the reason is recorded, not guessed). With ``record`` the cells
go into compat/tooling/data/companion_installs.json, which ``mcore-compat window --companion`` shows beside the
static verdicts.
"""
from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path

from compat.tooling.fsutil import atomic_write_text
from compat.tooling.gate.companions.catalog import Companion
from compat.tooling.gate.companions.source import release_tree
from compat.tooling.gate.surface.project import project_module, scan_project
from tools import smoke

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "compat" / "tooling" / "data" / "companion_installs.json"
HELD_BY_THE_PIN = {"megatron-core", "torch"}
OVERRIDE = ("the pin's own override (matrix.yaml: megatron-core without its dependencies or its Requires-Python): "
            "the companion with --no-deps, then its other declared dependencies")


def megatron_modules(companion: Companion, release: str) -> list[str]:
    """The release's modules that use megatron, in import order (packages first)."""
    scan = scan_project(release_tree(companion, release))
    return sorted({project_module(use.path)[0] for use in scan.uses}, key=lambda m: (m.count("."), m))


def outcome(imports: dict[str, str]) -> tuple[str, str]:
    """ok / fails / cannot-run from the probe. A module that needs a package nobody installed for it (another
    companion such as megatron.bridge, or an optional dependency still missing after the undeclared ones were
    installed) is a plugin the companion itself imports only when that package is there: it is counted, not held
    against the pair."""
    failed = {m: v for m, v in imports.items() if v != "ok"}
    optional = {m: v for m, v in failed.items() if _optional(v)}
    on_megatron = {m: v for m, v in failed.items() if _on_megatron(v)}
    other = {m: v for m, v in failed.items() if m not in optional and m not in on_megatron}
    imported = len(imports) - len(failed)
    note = f"; {len(optional)} plugin modules need a package not installed ({_first(optional)})" if optional else ""
    if on_megatron:
        return "fails", f"{_first(on_megatron)} ({len(on_megatron)} of {len(imports)} modules fail on megatron)"
    if other:
        return "cannot-run", f"{_first(other)} ({len(other)} of {len(imports)} modules fail){note}"
    return "ok", f"{imported} modules import{note}"


def _first(failures: dict[str, str]) -> str:
    module, cause = next(iter(failures.items()))
    return f"{module}: {cause}"


def _on_megatron(cause: str) -> bool:
    """The import failed on megatron-core itself (a module or name the pin lacks), not on another dependency."""
    return "megatron.core" in cause or "No module named 'megatron'" in cause


def _optional(cause: str) -> bool:
    if cause.startswith("undeclared import: "):
        return True
    named = re.search(r"No module named '([\w.]+)'", cause)
    return bool(named) and named.group(1).startswith("megatron.") and not named.group(1).startswith("megatron.core")


def _resolver_reason(output: str) -> str:
    """uv's first "Because ..." line: why no solution exists (a Requires-Python, a CUDA-only dependency)."""
    for line in output.splitlines():
        text = " ".join(line.split())
        if "Because " in text:
            return text[text.index("Because "):][:300]
    return ""


def declared_dependencies(companion: Companion, release: str) -> list[str]:
    """The release's Requires-Dist for a plain install with the catalogue's extras, without megatron-core and
    torch (the pin provides them)."""
    from packaging.requirements import InvalidRequirement, Requirement

    from compat.tooling import fetch
    from compat.tooling.archive import open_source

    headers = open_source(fetch.download(companion.package, release)).metadata_headers(["Requires-Dist"])
    wanted = []
    for text in headers.get("Requires-Dist", []):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.name.lower().replace("_", "-") in HELD_BY_THE_PIN:
            continue
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *companion.extras)):
            req.marker = None  # decided here: on a command line an `extra ==` marker is never true
            wanted.append(str(req))
    return wanted


def run_cell(companion: Companion, release: str, pin, *, python_exe: str, uv: str, index_args: list[str],
             log=print) -> dict:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        held = Path(tmp) / "constraints.txt"
        held.write_text(f"torch=={pin.torch}\nmegatron-core=={pin.version}\n")
        install = [uv, "pip", "install", "--python", python_exe, *index_args, "--constraint", str(held)]
        override = None
        if pin.no_deps or pin.ignore_requires_python:
            # the resolver would re-read megatron-core's metadata the pin's recipe had to bypass
            override = OVERRIDE
            code, output = smoke._run([*install, "--no-deps", companion.requirement(release)])
            deps = declared_dependencies(companion, release) if code == 0 else []
            if code == 0 and deps:
                code, output = smoke._run([*install, *deps])
        else:
            code, output = smoke._run([*install, companion.requirement(release)])
    cell = {"companion": companion.name, "release": release, "pin": pin.version, "python": pin.python,
            "torch": pin.torch, "override": override}
    if code != 0:
        reason = _resolver_reason(output)
        cell.update(outcome="cannot-install", detail=smoke.install_cause(code, output) + (f": {reason}" if reason
                                                                                            else ""))
    else:
        modules = megatron_modules(companion, release)
        first = smoke._probe(python_exe, modules)
        # what the companion imports without declaring it is installed, as a user would after the first error
        cell["undeclared"], imports = smoke._undeclared(python_exe, uv, index_args, modules, first)
        cell["outcome"], cell["detail"] = outcome(imports)
    cell["seconds"] = round(time.monotonic() - started, 1)
    cell["measured"] = time.strftime("%Y-%m-%d", time.gmtime())
    log(f"{companion.package}=={release} on megatron-core=={pin.version}: {cell['outcome']} ({cell['detail']})")
    return cell


def record(cells: list[dict], path: Path = DATA) -> None:
    """Replace the recorded cells with the same (companion, release, pin), keep the others."""
    data = json.loads(path.read_text(encoding="utf-8"))
    fresh = {(c["companion"], c["release"], c["pin"]) for c in cells}
    kept = [c for c in data["cells"] if (c["companion"], c["release"], c["pin"]) not in fresh]
    data["cells"] = sorted(kept + cells, key=lambda c: (c["companion"], c["release"], c["pin"]))
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def run_session(pin, argv: list[str], *, python_exe: str, uv: str, index_args: list[str], log=print) -> list[dict]:
    """``--companion NAME`` (repeatable; default: every companion), ``--last N`` (default 3) or ``--releases
    V1,V2``, ``--record``: run the cells of one pin and write them (raw, or recorded)."""
    import argparse

    from compat.tooling.gate.companions.catalog import companion, companions
    from compat.tooling.gate.companions.window import choose_releases, release_files
    from tools.results import results_dir_for

    parser = argparse.ArgumentParser(prog=f"nox -s companions-{pin.version} --")
    parser.add_argument("--companion", action="append", choices=sorted(companions()))
    parser.add_argument("--last", type=int, default=3)
    parser.add_argument("--releases", type=lambda t: [v for v in t.split(",") if v])
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args(argv)
    cells = []
    for name in args.companion or sorted(companions()):
        chosen = companion(name)
        for release in choose_releases(release_files(chosen), args.releases, args.last):
            cells.append(run_cell(chosen, release, pin, python_exe=python_exe, uv=uv, index_args=index_args,
                                  log=log))
    out = results_dir_for(False) / "companions"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{pin.version}.json", json.dumps(cells, indent=1, sort_keys=True) + "\n")
    if args.record:
        record(cells)
    return cells
