"""What the two lane scripts (tests/ckpt/lane.py, tests/equiv/lane.py) share: their launch options, loading one
as a module the way running it sees its imports, and the environment their worker.py processes start with.

The lane scripts import tools/ and so run from the checkout root with it on PYTHONPATH
(``PYTHONPATH=. python tests/ckpt/lane.py ...``; the nox lane sessions set it)."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from tools.siblings import load_file

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
    """A lane script as a module, its bare imports of its own folder's modules (``import compare``) resolved as
    ``python tests/ckpt/lane.py`` resolves them (tools/siblings.py; nothing is put on sys.path), the module under a
    name of its own (both lanes are files named lane.py). ``path`` relative to the checkout (or absolute); the module is
    run afresh on every call and registered in sys.modules as ``name``."""
    script = Path(path) if Path(path).is_absolute() else ROOT / path
    sys.modules.pop(name, None)
    return load_file(script, name)


# What a lane's worker.py (a script: its own folder comes first on sys.path) imports from elsewhere in the checkout:
# the DDP harness, the checkpoint lane's patches (the equivalence worker uses them too), and compat and tools/ from the
# root where the venv has no compat installed (a lane venv has this checkout's, editable: the same files).
WORKER_PATH = (ROOT / "tests" / "integration", ROOT / "tests" / "ckpt", ROOT)


def worker_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with WORKER_PATH ahead of its PYTHONPATH, for starting a lane's
    worker.py (directly, or under torchrun, whose ranks inherit it)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, WORKER_PATH), *filter(None, [env.get("PYTHONPATH")])])
    return env
