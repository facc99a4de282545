"""Harvest Megatron-LM command-line argument lists from real launch scripts (bash), as data.

From each script: the tokens of every bash array (``MODEL_ARGS=( --num-layers 36 ... )``) except the launcher's
(``DISTRIBUTED_ARGS``, torchrun flags). ``${VAR:-default}`` becomes its default, ``$VAR`` a literal assignment of
VAR in the same script; a flag whose value cannot be resolved is left out with its value (counted, never guessed).
Only scripts that set ``--num-layers`` are kept (the others configure no model).

The split was fixed before any script was looked at: slime (``scripts/models``) is the development set, Megatron-LM's
own ``examples/`` and Pai-Megatron-Patch the evaluation set.

Usage: ``python -m benchmarks.launch_args_harvest`` (snapshots under ``$MCORE_COMPAT_MIRROR``).
"""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tools.git_snapshots import mirror_root

SOURCES = [  # (project, git dir, ref, path prefix, set)
    ("THUDM/slime", "THUDM+slime", "HEAD", "scripts/models/", "dev"),
    ("NVIDIA/Megatron-LM", "NVIDIA+Megatron-LM", "core_v0.19.0", "examples/", "eval"),
    ("alibaba/Pai-Megatron-Patch", "alibaba+Pai-Megatron-Patch", "HEAD", "examples/", "eval"),
]
LAUNCHER_ARRAYS = {"DISTRIBUTED_ARGS", "DISTRIBUTED_ARGUMENTS", "TORCHRUN_ARGS", "LAUNCHER_ARGS"}
OUT = Path(__file__).resolve().parents[1] / "tests" / "contract" / "data" / "launch_args.json"
_ARRAY = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\+?=\(\s*(.*?)\)", re.S | re.M)
_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=([^\s(][^\s]*)\s*$", re.M)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True,
                          text=True).stdout


def _strip_comments(text: str) -> str:
    return "\n".join(line.split(" #", 1)[0] if not line.lstrip().startswith("#") else "" for line in
                     text.splitlines())


def _resolve(token: str, env: dict) -> str | None:
    unresolved = False

    def sub(m):
        nonlocal unresolved
        name = m.group(1) or m.group(3)
        if m.group(2) is not None:
            return m.group(2)
        if name in env:
            return env[name]
        unresolved = True
        return ""

    out = _VAR.sub(sub, token)
    return None if unresolved or "$" in out or "`" in out else out


def args_of(text: str) -> tuple[list[str], int]:
    """(argument list, flags left out unresolved) of one script."""
    text = _strip_comments(text.replace("\\\n", " "))
    env = {}
    for name, value in _ASSIGN.findall(text):
        resolved = _resolve(value.strip("'\""), env)
        if resolved is not None:
            env[name] = resolved
    out, dropped = [], 0
    for name, body in _ARRAY.findall(text):
        if name in LAUNCHER_ARRAYS:
            continue
        try:
            tokens = shlex.split(body)
        except ValueError:
            continue
        flag = None
        for token in tokens:
            if token.startswith("--"):
                flag = token
                out.append(token)
                continue
            value = _resolve(token, env)
            if value is None or flag is None:
                if flag is not None and out and out[-1] == flag:
                    out.pop()
                    dropped += 1
                flag = None
                continue
            out.append(value)
    return out, dropped


def harvest() -> dict:
    scripts = []
    for project, mirror, ref, prefix, split in SOURCES:
        git_dir = mirror_root(None) / mirror / "repo"
        if not git_dir.exists():
            print(f"{project}: no mirror at {git_dir}", file=sys.stderr)
            continue
        commit = _git(git_dir, "rev-parse", ref).strip()
        for path in _git(git_dir, "ls-tree", "-r", "--name-only", ref).splitlines():
            if not (path.startswith(prefix) and path.endswith(".sh")):
                continue
            args, dropped = args_of(_git(git_dir, "show", f"{commit}:{path}"))
            if "--num-layers" in args:
                scripts.append({"project": project, "commit": commit, "file": path, "set": split, "args": args,
                                "flags_unresolved": dropped})
    return {"format": 1, "source": "bash arrays of launch scripts, by benchmarks/launch_args_harvest.py",
            "scripts": scripts}


def main() -> int:
    data = harvest()
    OUT.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    for split in ("dev", "eval"):
        rows = [s for s in data["scripts"] if s["set"] == split]
        print(f"{split}: {len(rows)} scripts ({', '.join(sorted({s['project'] for s in rows}))})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
