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


def megatron_modules(companion: Companion, release: str) -> list[str]:
    """The release's modules that use megatron, in import order (packages first)."""
    scan = scan_project(release_tree(companion, release))
    return sorted({project_module(use.path)[0] for use in scan.uses}, key=lambda m: (m.count("."), m))


def outcome(imports: dict[str, str]) -> tuple[str, str]:
    failed = {m: v for m, v in imports.items() if v != "ok"}
    if not failed:
        return "ok", f"{len(imports)} modules import"
    on_megatron = {m: v for m, v in failed.items() if _on_megatron(v)}
    first, shown = next(iter((on_megatron or failed).items()))
    kind = "fails" if on_megatron else "cannot-run"
    return kind, f"{first}: {shown} ({len(failed)} of {len(imports)} modules fail)"


def _on_megatron(cause: str) -> bool:
    """The import failed on megatron-core itself (a module or name the pin lacks), not on another dependency."""
    return "megatron.core" in cause or "No module named 'megatron'" in cause


def run_cell(companion: Companion, release: str, pin, *, python_exe: str, uv: str, index_args: list[str],
             log=print) -> dict:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        held = Path(tmp) / "constraints.txt"
        held.write_text(f"torch=={pin.torch}\nmegatron-core=={pin.version}\n")
        code, output = smoke._run([uv, "pip", "install", "--python", python_exe, *index_args, "--constraint",
                                   str(held), companion.requirement(release)])
    cell = {"companion": companion.name, "release": release, "pin": pin.version, "python": pin.python,
            "torch": pin.torch}
    if code != 0:
        cell.update(outcome="cannot-install", detail=smoke.install_cause(code, output))
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
