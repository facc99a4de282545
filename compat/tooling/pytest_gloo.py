# SPDX-License-Identifier: Apache-2.0
"""pytest plugin: the ``gloo_world`` fixture runs a function in N torchrun-started CPU ranks with our CPU patches.

Loaded by the ``pytest11`` entry point of mcore-compat (or ``-p compat.tooling.pytest_gloo``, or
``pytest_plugins = ["compat.tooling.pytest_gloo"]`` in a root conftest.py). A host tests its Megatron DDP code on
CPU on every pin::

    def step(hidden):                     # module level: each rank imports it by name
        from megatron.core import parallel_state
        parallel_state.initialize_model_parallel(1, 1)
        ...
        return {"loss": float(loss)}      # JSON-able

    def test_ddp_step(gloo_world):
        ranks = gloo_world(step, n=2, args=(64,))
        assert ranks[0]["loss"] == ranks[1]["loss"]

Each rank runs ``compat.tooling.gloo_rank`` under ``python -m torch.distributed.run --standalone`` (env:// rendezvous):
patches from compat.tooling.cpu_patches for the installed megatron-core (``patches=False``: none), a gloo process
group, then the function. The fixture returns the ranks' return values in rank order, or raises GlooWorldError
with every failed rank's traceback and the launch's output tail.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from .torchrun import TORCHRUN_VARS, torchrun_argv

__all__ = ["GlooWorld", "GlooWorldError", "gloo_world", "import_root", "target_name"]

DEFAULT_TIMEOUT_S = float(os.environ.get("MCORE_COMPAT_GLOO_TIMEOUT", "420"))


class GlooWorldError(RuntimeError):
    """A rank failed, wrote nothing, or the launch timed out; ``ranks`` holds every rank's result dict."""

    def __init__(self, message: str, ranks: list[dict]) -> None:
        super().__init__(message)
        self.ranks = ranks


def target_name(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of a module-level function (a rank imports it by that name)."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not callable(fn) or not module or module == "__main__" or "<" in qualname:
        raise TypeError(f"fn={fn!r} is not supported; supported: a function defined at module level of an "
                        "importable module (not a lambda, a local function or __main__)")
    return f"{module}:{qualname}"


def import_root(module_name: str, module_file: str) -> str:
    """The sys.path entry from which ``module_name`` imports as the file ``module_file`` (pytest's rootdir-relative
    module names, e.g. ``tests.unit.test_x``, and bare ``test_x`` from an inserted test folder alike)."""
    path = Path(module_file).resolve()
    depth = module_name.count(".") + (1 if path.stem == "__init__" else 0)
    return str(path.parents[depth])


class GlooWorld:
    """The fixture's value: ``gloo_world(fn, n=2, args=(), kwargs=None, timeout=..., patches=True)``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.last_wall_s: float | None = None
        self.last_ranks: list[dict] = []  # the last launch's rank dicts: patches, megatron_version, seconds

    def __call__(self, fn: Callable[..., Any], n: int = 2, *, args: Sequence[Any] = (),
                 kwargs: dict[str, Any] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 patches: bool = True) -> list[Any]:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n={n!r} is not supported; supported: an int >= 1 (ranks)")
        target = target_name(fn)
        module = sys.modules.get(fn.__module__)
        roots = [import_root(fn.__module__, module.__file__)] if getattr(module, "__file__", None) else []
        out = Path(tempfile.mkdtemp(prefix="gloo_world_", dir=self.workdir))
        spec = {"target": target, "args": list(args), "kwargs": dict(kwargs or {}), "patches": patches,
                "timeout": timeout, "out_dir": str(out)}
        (out / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        argv = torchrun_argv(n, ["-m", "compat.tooling.gloo_rank", str(out / "spec.json")], python=sys.executable)
        return self._launch(argv, out, n, timeout, roots)

    def _launch(self, argv: list[str], out: Path, n: int, timeout: float, roots: list[str]) -> list[Any]:
        import time

        env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_VARS and not k.startswith("TORCHELASTIC")}
        env["PYTHONPATH"] = os.pathsep.join([*roots, *[p for p in sys.path if p], env.get("PYTHONPATH", "")])
        env.setdefault("OMP_NUM_THREADS", "1")
        log = out / "torchrun.log"
        t0 = time.monotonic()
        with open(log, "wb") as fh:
            proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            try:
                proc.wait(timeout)
                why = f"torchrun exited {proc.returncode}"
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # torchrun and its ranks: its own session
                proc.wait()
                why = f"killed after {timeout:g} s"
        self.last_wall_s = time.monotonic() - t0
        ranks = []
        for rank in range(n):
            path = out / f"rank{rank}.json"
            ranks.append(json.loads(path.read_text(encoding="utf-8")) if path.exists()
                         else {"rank": rank, "error": f"rank {rank} wrote no result ({why})"})
        self.last_ranks = ranks
        failed = [r for r in ranks if r.get("error")]
        if failed or proc.returncode != 0:
            tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
            details = "\n".join(f"--- rank {r['rank']}:\n{r['error']}" for r in failed)
            raise GlooWorldError(f"gloo_world: {len(failed)} of {n} ranks failed ({why})\n{details}\n"
                                 f"--- torchrun output (tail):\n{tail}", ranks)
        return [r.get("value") for r in ranks]


@pytest.fixture
def gloo_world(tmp_path: Path) -> GlooWorld:
    """Run a module-level function in N torchrun-started gloo ranks with our CPU patches; returns per-rank values."""
    return GlooWorld(tmp_path)
