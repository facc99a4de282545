"""What the two lane scripts (tests/ckpt/lane.py, tests/equiv/lane.py) share: their launch options, and loading one
as a module the way running it sees its imports."""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def subcommand_parser(doc: str) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """A lane's parser (described by its docstring's first line) and its required subcommands."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    return parser, parser.add_subparsers(dest="command", required=True)


def add_launch_options(parser: argparse.ArgumentParser, *, timeout_env: str, torchrun_help: str,
                       timeout_help: str | None = None) -> None:
    """--backend, --torchrun and --timeout (seconds before the ranks are killed; default from ``timeout_env``)."""
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    parser.add_argument("--torchrun", action="store_true", help=torchrun_help)
    parser.add_argument("--timeout", type=float, default=float(os.environ.get(timeout_env, "300")), help=timeout_help)


def load_script(path: str | Path, name: str) -> ModuleType:
    """A script's own directory first on sys.path (``python tests/ckpt/lane.py`` gives it that), the module under a
    name of its own (both lanes are files named lane.py). ``path`` relative to the checkout (or absolute); the module is
    registered in sys.modules as ``name``."""
    script = Path(path) if Path(path).is_absolute() else ROOT / path
    folder = str(script.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, script)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {script} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
