"""The floor plan: the runtime (compat/*.py) never imports the tooling (compat/tooling/), the public names and the
TYPE_CHECKING block agree, every module carries its SPDX line, and vendor ships what the runtime reads."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from source_trees import parsed

import compat
from compat.tooling import vendor

PACKAGE = Path(compat.__file__).resolve().parent  # the package under test (installed in the unit session)
REPO = Path(__file__).resolve().parents[2]  # the checkout: pyproject.toml, README.md, docs/, tools/
RUNTIME = sorted(p for p in PACKAGE.glob("*.py") if p.name != "__main__.py")
TOOLING = "compat.tooling"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported_modules(path: Path, name: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in the file, lazy ones inside functions included."""
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found += [(node.lineno, target)] + [(node.lineno, f"{target}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found


def test_runtime_modules_import_nothing_of_the_tooling():
    assert len(RUNTIME) >= 15 and PACKAGE / "resolution.py" in RUNTIME
    bad = [f"{p.name}:{line} imports {target}" for p in RUNTIME for line, target in imported_modules(p)
           if target == TOOLING or target.startswith(TOOLING + ".")]
    assert not bad, "the runtime must not depend on the tooling:\n" + "\n".join(bad)


def test_the_boundary_check_sees_lazy_and_dynamic_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import importlib\n\ndef f():\n    from .tooling.archive import read_file\n"
                     "    from . import tooling\n    return importlib.import_module('compat.tooling.cli')\n")
    targets = {t for _, t in imported_modules(probe, "compat.version")}
    assert {"compat.tooling.archive", "compat.tooling", "compat.tooling.cli"} <= targets


def test_public_calls_load_no_tooling_module():
    code = ("import sys, compat\n"
            "compat.ddp_kwargs({'use_megatron_fsdp': True}, None, version='0.13.1')\n"
            "compat.resolve_configs(ddp={'overlap_param_gather': True, 'use_distributed_optimizer': True},\n"
            "    optimizer={'optimizer': 'adam', 'bf16': True, 'use_distributed_optimizer': True}, version='0.19.2')\n"
            "compat.transformer_kwargs({'num_layers': 2, 'hidden_size': 64, 'num_attention_heads': 4},"
            " version='0.16.1')\n"
            "print(sorted(m for m in sys.modules if m.startswith('compat.')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr
    loaded = ast.literal_eval(proc.stdout.strip())
    assert "compat.resolution" in loaded and not [m for m in loaded if m.startswith(TOOLING)]


def _json_names(paths) -> set[str]:
    """Every ``*.json`` file name the modules spell as a string constant."""
    return {node.value for p in paths for node in ast.walk(parsed(p))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".json")}


def test_runtime_data_is_exactly_what_the_runtime_reads_and_vendor_ships_it():
    """compat/data/ holds what a runtime module names and nothing else (a tooling-only file there would be vendored
    into every host); vendor copies all of it."""
    named, held = _json_names(RUNTIME), {p.name for p in (PACKAGE / "data").glob("*.json")}
    assert named and named == held, {"named, not in data/": sorted(named - held),
                                     "in data/, named by no runtime module": sorted(held - named)}
    assert {rel for rel in vendor.source_files() if rel.startswith("data/")} == {f"data/{n}" for n in held}


def test_tooling_data_is_read_by_the_tooling_only():
    """compat/tooling/data/ holds what tooling modules name, none of which the runtime reads; it is package data."""
    tooling = sorted((PACKAGE / "tooling").rglob("*.py"))
    held = {p.name for p in (PACKAGE / "tooling" / "data").glob("*.json")}
    assert held and held <= _json_names(tooling), sorted(held - _json_names(tooling))
    assert not held & _json_names(RUNTIME)
    assert not held & {p.name for p in (PACKAGE / "data").glob("*.json")}


def test_vendored_copy_carries_license_notice_and_py_typed():
    files = vendor.source_files()
    assert {"LICENSE", "NOTICE", "py.typed"} <= set(files)
    assert b"Apache License" in files["LICENSE"] and b"megatron-core" in files["NOTICE"]
    assert not [rel for rel in files if rel.startswith("tooling/") or rel == "__main__.py"]


def test_every_module_has_an_spdx_line():
    missing = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.read_text(encoding="utf-8").splitlines()[:1] != ["# SPDX-License-Identifier: Apache-2.0"]]
    assert not missing


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    blocks = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1
    return {a.name: node.module for node in blocks[0].body if isinstance(node, ast.ImportFrom) for a in node.names}


def test_all_lazy_exports_and_type_checking_block_agree():
    assert compat.__all__ == sorted(compat._EXPORTS)
    assert _type_checking_imports() == compat._EXPORTS
    proc = subprocess.run([sys.executable, "-c", "import compat, json; print(json.dumps("
                           "{n: getattr(compat, n).__module__ for n in compat.__all__}))"],
                          capture_output=True, text=True, cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(proc.stdout)
    # a class or function re-exported from elsewhere would still name its defining module
    assert modules == {name: f"compat.{module}" for name, module in compat._EXPORTS.items()}


def test_py_typed_is_package_data():
    assert (PACKAGE / "py.typed").is_file()
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"py.typed"' in pyproject and '"LICENSE"' in pyproject and '"NOTICE"' in pyproject


def test_messages_name_the_command_the_way_the_package_was_imported(tmp_path):
    """A copy with its tooling says ``python -m <its import name>``; a vendored copy (runtime only) names the
    installed tool; no message spells ``python -m compat`` by hand."""
    import shutil

    host = tmp_path / "host"
    shutil.copytree(PACKAGE, host / "_vendor" / "mc", ignore=shutil.ignore_patterns("__pycache__"))
    (host / "__init__.py").write_text("")
    (host / "_vendor" / "__init__.py").write_text("")
    code = ("import host._vendor.mc.errors as e, json; print(json.dumps(e.cli_command('fields')))")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}  # the host's root (the unit session sets PYTHONSAFEPATH)
    run = lambda: json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,  # noqa: E731
                                            cwd=tmp_path, env=env, check=True).stdout)
    assert run() == "python -m host._vendor.mc fields"
    shutil.rmtree(host / "_vendor" / "mc" / "tooling")
    assert run() == "mcore-compat fields"
    spelled = [f"{p.relative_to(PACKAGE)}:{node.lineno}" for p in PACKAGE.rglob("*.py")
               for node in ast.walk(parsed(p))
               if isinstance(node, ast.Constant) and isinstance(node.value, str) and "python -m compat" in node.value
               and not (isinstance(node, ast.Constant) and _is_docstring(p, node))]
    assert not spelled


def _is_docstring(path: Path, node: ast.Constant) -> bool:
    tree = parsed(path)
    holders = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    return any(h.body and isinstance(h.body[0], ast.Expr) and h.body[0].value.lineno == node.lineno
               and h.body[0].value.col_offset == node.col_offset for h in holders)


def _layout_tool():
    from tools import layout

    return layout


def test_architecture_layout_lists_every_module_and_is_current():
    layout = _layout_tool()
    assert layout.problems() == []  # every module of compat/ is placed, runtime apart from tooling
    assert not [m for m in layout.RUNTIME if m.startswith("tooling/")]
    assert set(layout.TOOLING) >= {m for m in layout.modules() if m.startswith("tooling/")}
    document = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert layout.replaced(document) == document, "docs/architecture.md's layout is stale: run python -m tools.layout"


def test_layout_check_finds_an_unlisted_module(monkeypatch):
    layout = _layout_tool()
    monkeypatch.setattr(layout, "RUNTIME", [m for m in layout.RUNTIME if m != "cross.py"])
    assert layout.problems() == ["compat/cross.py is not in tools/layout.py (RUNTIME or TOOLING)"]


def test_readme_opens_with_use_it_in_your_project():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    headings = [line for line in readme.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Use it in your project"
    section = readme.split("## Use it in your project", 1)[1].split("\n## ", 1)[0]
    for needed in ("vendor --check", "packaging", "__init__.py", "build_ddp_config", "gate megatron-core==",
                   "pip wheel"):
        assert needed in section, needed


def test_public_functions_are_annotated():
    """Hosts run mypy/pyright on their calls: every parameter and the return of each public function is typed."""
    import inspect

    missing = []
    for name in compat.__all__:
        obj = getattr(compat, name)
        if inspect.isclass(obj):
            continue
        sig = inspect.signature(obj)
        missing += [f"{name}({p})" for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
        if sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} -> ?")
    assert not missing
