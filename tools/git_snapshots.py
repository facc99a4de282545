"""Snapshots of other projects' git repositories, read with git alone: where the mirror is, and a tree exported.

The mirror holds ``<owner>+<name>/repo`` git directories (bare clones). Its root comes from ``--mirror`` or the
``MCORE_COMPAT_MIRROR`` environment variable; nothing here knows a machine's paths.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import threading
from pathlib import Path

MIRROR_VARIABLE = "MCORE_COMPAT_MIRROR"


def mirror_root(given: str | Path | None) -> Path:
    """The mirror directory: ``given`` (a ``--mirror`` argument), else ``$MCORE_COMPAT_MIRROR``; exits with a clear
    message when neither is set."""
    value = given or os.environ.get(MIRROR_VARIABLE)
    if not value:
        raise SystemExit(f"no snapshot mirror: pass --mirror DIR or set {MIRROR_VARIABLE} "
                         "(a directory of <owner>+<name>/repo git directories)")
    return Path(value)


def git_dir(mirror: Path, repo: str) -> Path:
    path = mirror / repo.replace("/", "+") / "repo"
    if not path.is_dir():
        raise SystemExit(f"{path} missing: fetch {repo} first")
    return path


def export(gitdir: Path, rev: str, dest: Path, under: str | None = None) -> str:
    """Write the regular .py files of ``rev`` (optionally below ``under``) into ``dest``; returns the full sha."""
    sha = subprocess.run(["git", "-C", str(gitdir), "rev-parse", rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    listing = subprocess.run(["git", "-C", str(gitdir), "ls-tree", "-r", "-z", sha] + ([under] if under else []),
                             capture_output=True, check=True).stdout.split(b"\0")
    blobs = []
    for entry in filter(None, listing):
        meta, path = entry.split(b"\t", 1)
        mode, kind, obj = meta.split()
        if kind == b"blob" and mode == b"100644" and path.endswith(b".py"):
            blobs.append((obj.decode(), path.decode("utf-8", "surrogateescape")))
    proc = subprocess.Popen(["git", "-C", str(gitdir), "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    requests = "".join(f"{obj}\n" for obj, _ in blobs).encode()

    def feed() -> None:  # in a thread: writing every request before reading deadlocks once both pipes fill
        proc.stdin.write(requests)
        proc.stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    for _obj, path in blobs:
        header = proc.stdout.readline().split()
        if len(header) < 3:  # "<sha> missing": a blob the snapshot does not hold
            continue
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    writer.join()
    proc.wait()
    return sha


def add_mirror_option(parser: argparse.ArgumentParser) -> None:
    """``--mirror DIR``, read through ``mirror_root`` (``$MCORE_COMPAT_MIRROR`` when it is not given)."""
    parser.add_argument("--mirror", type=Path, default=None,
                        help=f"snapshot mirror: <owner>+<name>/repo git directories (default: ${MIRROR_VARIABLE})")
