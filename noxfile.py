# /// script
# dependencies = ["nox>=2026.8.10", "pyyaml", "uv"]
# ///
"""Test matrix over the megatron-core releases pinned in matrix.yaml.

Only prerequisite: ``python3 -m pip install "nox[uv]"`` (with uv next to nox, script mode installs quietly;
plain nox prints pip's log on stdout and breaks ``nox -l --json``). Nox reads the script block above and builds
.nox/_nox_script_mode with nox, pyyaml and uv, then re-runs itself there.

    nox -l                      list sessions (nox -l --json for tags)
    nox -t cpu                  unit + every mcore-<version> session (what CI runs)
    nox -s unit                 registry-only tests (pytest tests -m "not megatron"), no torch or megatron-core
    nox -s mcore-0.16.1         torch 2.13.0+cpu + megatron-core 0.16.1, then pytest tests -m "megatron and not gpu"
    nox -t newest / -t oldest   the newest / oldest pin
    nox -s gpu-0.16.1           pytest tests -m gpu (skipped without CUDA)
    nox -s gate                 python -m tools.matrix gate latest
    nox -s gate -- latest --project .   surface gate: what the newest release breaks in this code
    nox -s mcore-0.16.1 -- -x -k ddp    arguments after -- go to pytest

Which tests a session runs is SELECTION below: every test runs in exactly one kind of CPU session (or in gpu-*).

Environment knobs: MCORE_COMPAT_WORKERS (pytest-xdist -n; default "auto" for unit, "0" for the pins, whose few
tests would pay a torch + megatron import per worker; "0" turns xdist off),
MCORE_COMPAT_TORCH_GPU (torch version for gpu-* sessions, e.g. "2.13.0+cu130"; default on a CUDA host:
the pin's version without +cpu, i.e. PyPI's CUDA build, checked after install),
MCORE_COMPAT_GPU_FORCE=1 (run gpu-* sessions without CUDA; they skip before installing otherwise),
MCORE_COMPAT_GATE_PROJECT=PATH (the gate session first runs the surface gate on PATH, e.g. ".").

CPU sessions may run side by side: `nox -j 2 -t cpu` (output is then printed per session when it ends).

Every session is a default session so that `nox -l --json` lists them all (nox lists only selected
sessions); a bare `nox` therefore runs everything. CI runs `nox -t cpu`.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nox
import nox.command
import nox.project
import nox.virtualenv

ROOT = Path(__file__).resolve().parent


def _import_from_checkout(name: str) -> None:
    """The checkout's top-level package ``name``, imported from its folder next to this file. nox runs this file by
    path (its own importlib load), so the checkout is not on sys.path: nox moves to this folder, but a console script
    has its bin/ first, not the working directory. Loaded by file path, not listed in the script block above: there
    a copy of compat would go stale as compat/ changes (nox reuses that venv while the block's dependencies are
    installed), and tools/ is in no wheel. Whatever Python runs nox, these are this working tree's compat and tools."""
    spec = importlib.util.spec_from_file_location(name, ROOT / name / "__init__.py",
                                                  submodule_search_locations=[str(ROOT / name)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


_import_from_checkout("compat")
_import_from_checkout("tools")

from compat.tooling import host_matrix, torchrun  # noqa: E402  (install mechanism and launch commands, shared with hosts)
from tools.matrix import load_matrix  # noqa: E402  (needs pyyaml: in the script block)

nox.needs_version = ">=2026.8.10"
nox.options.default_venv_backend = "uv"
nox.options.download_python = "never"
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True

# pyproject's `test` extra: pytest<9.2 (xdist's --dist loadgroup is broken on 9.2 + xdist 3.8), xdist, hypothesis, pyyaml
TEST_DEPS = nox.project.load_toml(ROOT / "pyproject.toml")["project"]["optional-dependencies"]["test"]
UNIT_PYTHON = "3.11"
PINS = load_matrix(ROOT / "matrix.yaml")  # raises a clear MatrixError on bad data
HAS_CUDA = shutil.which("nvidia-smi") is not None


# ------------------------------------------------------------------------------------ uv, pip.conf
def _require_uv() -> None:
    """uv is the only backend: nox would otherwise fall back to virtualenv+pip, ~2 min and 1 GB per session."""
    if not nox.virtualenv.HAS_UV:
        raise SystemExit(
            "noxfile.py: uv was not found (neither next to nox's Python nor on PATH). It is listed in this "
            "noxfile's script block, so `nox` from `python3 -m pip install \"nox[uv]\"` installs it; otherwise run "
            "`python3 -m pip install uv`. Refusing to fall back to virtualenv+pip.")


def index_args() -> list[str]:
    """pip.conf's find-links, indexes and constraint as uv arguments (uv ignores pip.conf): compat.tooling.host_matrix,
    the mechanism a host's noxfile uses too."""
    return host_matrix.index_args()


def uv_install(session: nox.Session, *args: str) -> None:
    session.install(*index_args(), *args)


_require_uv()  # at import: nox creates the venv (and would fall back) before any session code runs


# ----------------------------------------------------------------------------------------- pytest
# What each kind of session runs. Registry-only tests run once (unit); what depends on the installed
# megatron-core (marker `megatron`: contract, real DDP) runs on every pin, so a new megatron-marked test
# anywhere under tests/ joins every pin session by itself. gpu-marked tests always skip on the pins' +cpu
# torch, so they run only in gpu-<v>. tests/unit/test_sessions.py checks that every test lands somewhere.
SELECTION = {
    "unit": ["tests", "-m", "not megatron"],
    "pin": ["tests", "-m", "megatron and not gpu"],
    "gpu": ["tests", "-m", "gpu"],
}
WORKERS = {"unit": "auto", "pin": "0", "gpu": "0"}  # MCORE_COMPAT_WORKERS overrides


def _test_env() -> dict[str, str | None]:
    # PYTHONDONTWRITEBYTECODE=1 in this environment makes every `import torch, megatron.core` cost 23 s
    # of CPU instead of 9 s; uv does not byte-compile, so let the first import write the .pyc files.
    # One thread per process: the tests are tiny, and xdist workers, DDP ranks and parallel sessions
    # already use every core.
    return {"PYTHONDONTWRITEBYTECODE": None, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run_pytest(session: nox.Session, kind: str, *extra: str, all_skipped_ok: bool = False,
               extra_env: dict[str, str] | None = None, ranks: int | None = None) -> None:
    """Run SELECTION[kind] and make "ran no tests" loud: exit 5 (nothing collected) and an all-skipped run
    fail the session with a message saying so, except where ``all_skipped_ok`` (gpu sessions without CUDA)
    turns them into a visible nox "skipped". ``ranks``: pytest in every rank of a torchrun launch of that many
    ranks (compat.tooling.torchrun.pytest_ranks_argv), each writing its own junit file; rank 0's is counted."""
    selection = [*SELECTION[kind], *extra]
    if any(Path(a.split("::")[0]).exists() for a in session.posargs if not a.startswith("-")):
        selection.remove("tests")  # `nox -s unit -- tests/unit/test_fetch.py`: only what was named
    workers = os.environ.get("MCORE_COMPAT_WORKERS", WORKERS[kind])
    tmp = Path(session.create_tmp())
    junit = tmp / ("junit-rank0.xml" if ranks else "junit.xml")
    for old in [tmp / "junit.xml", *tmp.glob("junit-rank*.xml")]:
        old.unlink(missing_ok=True)
    args = ["pytest", *selection, "-o", "junit_family=xunit2"] + ([] if ranks else [f"--junitxml={junit}"])
    if workers != "0":
        args += ["-n", workers]
        if kind != "unit":  # one worker per file: a module fixture (the DDP spawn) must not run on every worker
            args += ["--dist", "loadfile"]
        else:  # an idle worker takes queued tests from the busy one: the unit session's tail of slow rows ends sooner
            args += ["--dist", "worksteal"]
    args += session.posargs
    if ranks:  # torchrun starts the ranks, every one a pytest process (the nccl tests then use env://)
        args = torchrun.pytest_ranks_argv(ranks, args[1:], str(tmp), python=str(Path(session.bin) / "python"))
    try:
        done = session.run(*args, env={**_test_env(), **(extra_env or {})})
    except nox.command.CommandFailed as exc:
        if exc.return_code != 5:
            raise
        message = f"pytest collected or selected no tests ({' '.join(selection)}): exit code 5"
        if all_skipped_ok:
            session.skip(message)
        session.error(message + ". A session that tests nothing must not pass.")
    if done is None:  # --install-only
        return
    if not junit.exists():
        if {"--co", "--collect-only"} & set(session.posargs):
            return
        session.error(f"pytest wrote no {junit}: cannot tell whether any test ran")
    if ranks and len(list(tmp.glob("junit-rank*.xml"))) != ranks:
        session.error(f"{ranks} torchrun ranks, but only {sorted(p.name for p in tmp.glob('junit-rank*.xml'))} written")
    total = skipped = 0
    root = ET.parse(junit).getroot()
    for suite in [root] if root.tag == "testsuite" else list(root.iter("testsuite")):
        total += int(suite.get("tests", 0))
        skipped += int(suite.get("skipped", 0))
    ran = total - skipped
    session.log(f"{session.name}: {ran} tests ran, {skipped} skipped, {total} collected")
    if ran == 0 and not {"--co", "--collect-only"} & set(session.posargs):
        message = f"all {total} tests were skipped" if total else "pytest ran no tests"
        if all_skipped_ok:
            session.skip(message)
        session.error(message + "; nothing was tested (see the skip reasons above).")


# --------------------------------------------------------------------------------------- sessions
@nox.session(python=UNIT_PYTHON, venv_backend="uv", tags=["cpu", "unit", "py311"], allow_parallel=True)
def unit(session: nox.Session) -> None:
    """Registry-only tests (everything not marked megatron): no torch, no megatron-core."""
    _require_uv()
    if not _stamp_matches(session, "unit", _unit_install_key()):
        uv_install(session, *TEST_DEPS)
        # A real (non-editable) install: this session also tests the packaging (subpackages, data files).
        install_checkout_wheel(session)
        if _installed_checkout(session, editable=False):
            _write_stamp(session, "unit", _unit_install_key())
    # PYTHONSAFEPATH: neither the xdist workers nor a `python -m compat` / `python -c` child started from the
    # checkout put the working directory first on sys.path, so they import the wheel just installed, not ./compat
    # (tests/unit/test_installed_package.py checks it where MCORE_COMPAT_EXPECT_WHEEL is set).
    run_pytest(session, "unit", extra_env={"PYTHONSAFEPATH": "1", "MCORE_COMPAT_EXPECT_WHEEL": "1"})


# ------------------------------------------------------------------------------------- install stamps
# A reused venv whose installs are what this run would ask for again skips them: uv's "already satisfied" checks,
# pip's for the ignore-requires-python pins and the wheel build cost 1-3 s per session (a third of a warm pin's
# setup). The stamp (a file in the venv, so a recreated venv has none) holds a hash of everything the installs
# depend on and of the venv's installed distributions as they were then (each dist-info's RECORD, which any install
# or uninstall rewrites: another run on the same envdir, e.g. `benchmarks/matrix_time.py --ref`, or a manual pip
# call voids it); it is written only after installs that really ran (not under `nox --no-install`).
def _installed_state(session: nox.Session, name: str) -> list:
    """(dist-info, RECORD mtime) of every installed distribution; the pin's recipe leaves out this checkout's own
    (installed after it, and stamped on its own)."""
    site = Path(session.virtualenv.location).glob("lib/python*/site-packages/*.dist-info/RECORD")
    return sorted((p.parent.name, p.stat().st_mtime_ns) for p in site
                  if not (name == "recipe" and p.parent.name.startswith("mcore_compat-")))


def _stamp_matches(session: nox.Session, name: str, key: str) -> bool:
    stamp = Path(session.virtualenv.location) / f".mcore-compat-{name}"
    if stamp.is_file() and stamp.read_text() == _digest(key, _installed_state(session, name)):
        session.log(f"{session.name}: the {name} install is as this run would make it (stamp in the venv): skipped")
        return True
    return False


def _write_stamp(session: nox.Session, name: str, key: str) -> None:
    runner = getattr(session, "_runner", None)  # nox has no public flag for "installs were skipped"
    try:
        skipped = bool(runner.global_config.no_install and runner.venv._reused)
    except AttributeError:
        return  # cannot tell: write nothing, the next run installs again
    if not skipped:
        stamp = Path(session.virtualenv.location) / f".mcore-compat-{name}"
        stamp.write_text(_digest(key, _installed_state(session, name)))


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _unit_install_key() -> str:
    """The test deps, the indexes and every file the wheel is built from (pyproject.toml and compat/)."""
    files = sorted(p for p in (ROOT / "compat").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    contents = [(p.relative_to(ROOT).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest()) for p in files]
    return _digest(TEST_DEPS, index_args(), (ROOT / "pyproject.toml").read_text(encoding="utf-8"), contents)


def install_checkout_wheel(session: nox.Session) -> None:
    """This checkout as a real (non-editable) install. setuptools builds through ./build/lib and never removes a
    file from it, so a module renamed or deleted in the tree would still be packaged from a stale build/: clear it."""
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    uv_install(session, "--reinstall-package", "mcore-compat", ".")


def _installed_checkout(session: nox.Session, *, editable: bool) -> bool:
    """This checkout is installed in the venv, editable or as a wheel (its direct_url.json says which)."""
    site = Path(session.virtualenv.location).glob("lib/python*/site-packages/mcore_compat-*.dist-info/direct_url.json")
    for record in site:
        try:
            info = json.loads(record.read_text())
        except (OSError, ValueError):
            return False
        return info.get("url") == ROOT.as_uri() and bool(info.get("dir_info", {}).get("editable")) is editable
    return False


def install_checkout_editable(session: nox.Session) -> None:
    """This checkout, editable: the tests see the working tree, so a reused venv needs no reinstall unless
    pyproject.toml changed (`uv pip install -e .` rebuilds on every call, 1.5-3 s). The unit session
    installs the real wheel and so tests the packaging."""
    key = _digest((ROOT / "pyproject.toml").read_text(encoding="utf-8"), index_args())
    if _installed_checkout(session, editable=True) and _stamp_matches(session, "editable", key):
        return
    uv_install(session, "-e", ".")
    if _installed_checkout(session, editable=True):
        _write_stamp(session, "editable", key)


def install_pin(session: nox.Session, pin, *, torch: str) -> None:
    """torch + megatron-core per the pin's recipe + test deps (compat.tooling.host_matrix.install_pin, what a host's
    noxfile calls) + this repo (editable); skipped on a reused venv whose stamp says the same steps were run. Whether
    megatron imports is checked by tests/conftest.py inside pytest, which imports it anyway (a separate `python -c`
    check cost a second torch + megatron import)."""
    _require_uv()
    steps = host_matrix.install_steps(pin, torch=torch, deps=TEST_DEPS, index=index_args())
    recipe = _digest([(step.tool, step.args) for step in steps])
    if not _stamp_matches(session, "recipe", recipe):
        host_matrix.install_pin(session, pin, steps=steps)
        _write_stamp(session, "recipe", recipe)
    install_checkout_editable(session)


def make_cpu_session(pin):
    def session_fn(session: nox.Session) -> None:
        install_pin(session, pin, torch=pin.torch)
        # Tests may use this to fail (not skip) when the megatron-core they see is not the pinned one.
        run_pytest(session, "pin", extra_env={"MCORE_COMPAT_EXPECT_MEGATRON": pin.version})

    session_fn.__doc__ = (f"megatron-core {pin.version} on torch {pin.torch}: the megatron-marked tests "
                          f"(contract, real DDP). {pin.note}")
    session_fn.__name__ = f"mcore_{pin.version.replace('.', '_')}"
    return session_fn


def gpu_ranks() -> int:
    """The gpu-* sessions' torchrun world: every visible GPU (nvidia-smi -L narrowed by CUDA_VISIBLE_DEVICES);
    1 without any (MCORE_COMPAT_GPU_FORCE=1 on a CPU host), so the launch path still runs."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return max(1, torchrun.visible_gpu_count(out.splitlines()))


def make_gpu_session(pin):
    def session_fn(session: nox.Session) -> None:
        if not HAS_CUDA and os.environ.get("MCORE_COMPAT_GPU_FORCE") != "1":
            session.skip("no CUDA here (nvidia-smi not found); MCORE_COMPAT_GPU_FORCE=1 installs and runs anyway")
        # On a CUDA host the pin's +cpu torch would make every gpu test skip: default to the public release
        # (the CUDA build on PyPI) and check below that it really is a CUDA build.
        default = pin.torch.split("+")[0] if HAS_CUDA else pin.torch
        torch = os.environ.get("MCORE_COMPAT_TORCH_GPU", default)
        install_pin(session, pin, torch=torch)
        if HAS_CUDA:
            session.run("python", "-c", "import torch, sys; print('torch', torch.__version__, 'cuda', "
                        "torch.version.cuda, 'available', torch.cuda.is_available()); "
                        "sys.exit(0 if torch.version.cuda else 'torch is a CPU build on a CUDA host: set "
                        "MCORE_COMPAT_TORCH_GPU, e.g. 2.13.0+cu130')")
        run_pytest(session, "gpu", all_skipped_ok=not HAS_CUDA,
                   extra_env={"MCORE_COMPAT_EXPECT_MEGATRON": pin.version}, ranks=gpu_ranks())

    session_fn.__doc__ = (f"megatron-core {pin.version}: torchrun, one rank per visible GPU, pytest tests -m gpu "
                          f"(skipped without CUDA). {pin.note}")
    session_fn.__name__ = f"gpu_{pin.version.replace('.', '_')}"
    return session_fn


for _pin in PINS:
    nox.session(name=f"mcore-{_pin.version}", python=_pin.python, venv_backend="uv", allow_parallel=True,
                tags=_pin.all_tags(kind="cpu"))(make_cpu_session(_pin))
    nox.session(name=f"gpu-{_pin.version}", python=_pin.python, venv_backend="uv",
                tags=_pin.all_tags(kind="gpu"))(make_gpu_session(_pin))


@nox.session(python=UNIT_PYTHON, venv_backend="uv", tags=["gate"])
def gate(session: nox.Session) -> None:
    """Upgrade gate: python -m tools.matrix gate latest (arguments after -- replace `latest`): the package's gate
    with the test matrix, so a release already registered is compared with the pin before it.

    MCORE_COMPAT_GATE_PROJECT=PATH (e.g. `.` in a repository that vendors compat/) first runs the surface gate,
    `gate latest --project PATH`: what the newest release breaks in that code, file and line."""
    _require_uv()
    uv_install(session, "pyyaml>=6")
    install_checkout_wheel(session)
    env = {"PYTHONDONTWRITEBYTECODE": None}
    project = os.environ.get("MCORE_COMPAT_GATE_PROJECT", "").strip()
    if project and not session.posargs:
        session.run("python", "-m", "compat", "gate", "latest", "--project", project, env=env)
    session.run("python", "-m", "tools.matrix", "gate", *(session.posargs or ["latest"]), env=env)


# ------------------------------------------------------------------------------- checkpoint lane
# A checkpoint saved with pin N-1 must load on pin N with every optimizer byte intact. One session per adjacent
# pair of pins (`ckpt-<old>-to-<new>`, tags ckpt + cpu); it saves in the old pin's venv and loads in the new pin's
# venv, in separate processes (tests/ckpt/lane.py); its tables and timings go to the ignored benchmarks/results/raw/
# unless the pair session is given `-- --record` (tools/results.py). Each pin's lane venv (`ckpt-venv-<version>`, the pin's recipe
# plus psutil) is a session of its own that the pair sessions require, so `nox -t ckpt` builds 13 venvs, not 24.
CKPT_DEPS = ["psutil"]  # dist_checkpointing's forked writer needs it; without it a rank hangs forever
CKPT_PYTHON: dict[str, str] = {}  # "<backend>:<version>" -> python of that pin's lane venv (filled by its session)


def _lane_env() -> dict[str, str | None]:
    """The lane scripts' environment: they run as scripts (`python tests/ckpt/lane.py`) and import the checkout's
    tools/, so the root goes on PYTHONPATH (the lane venv's compat is this checkout's, editable: first or not, the
    same files); their worker.py processes get theirs from tools/lane_common.worker_env."""
    return {"PYTHONDONTWRITEBYTECODE": None, "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _ckpt_pins(pins) -> list:
    """The pins from tests/ckpt/expected.yaml's first_saver on (older pins cannot save on the matrix's torch)."""
    import yaml

    from compat.version import at_least

    with open(ROOT / "tests" / "ckpt" / "expected.yaml", encoding="utf-8") as fh:
        first = yaml.safe_load(fh)["first_saver"]
    return [pin for pin in pins if at_least(pin.version, first)]


def _ckpt_venv_session(pin, *, gpu: bool):
    def session_fn(session: nox.Session) -> None:
        if gpu and not HAS_CUDA and os.environ.get("MCORE_COMPAT_GPU_FORCE") != "1":
            session.skip("no CUDA here (nvidia-smi not found): the nccl checkpoint lane needs a GPU")
        torch = pin.torch
        if gpu and HAS_CUDA:
            torch = os.environ.get("MCORE_COMPAT_TORCH_GPU", pin.torch.split("+")[0])
        install_pin(session, pin, torch=torch)
        uv_install(session, *CKPT_DEPS)
        CKPT_PYTHON[f"{'nccl' if gpu else 'gloo'}:{pin.version}"] = str(Path(session.bin) / "python")

    kind = "nccl (CUDA torch)" if gpu else "gloo"
    session_fn.__doc__ = f"checkpoint-lane venv of megatron-core {pin.version} ({kind}): the pin's recipe + psutil"
    return session_fn


def _ckpt_pair_session(old, new, *, gpu: bool):
    backend = "nccl" if gpu else "gloo"

    def session_fn(session: nox.Session) -> None:
        if gpu and not HAS_CUDA and os.environ.get("MCORE_COMPAT_GPU_FORCE") != "1":
            session.skip("no CUDA here (nvidia-smi not found): the nccl checkpoint lane needs a GPU; the gloo lane "
                         f"ckpt-{old.version}-to-{new.version} covers CPU")
        pythons = []
        for pin in (old, new):
            python = CKPT_PYTHON.get(f"{backend}:{pin.version}")
            if python is None:
                session.error(f"the lane venv of {pin.version} was not built in this run (was --no-deps given?)")
            pythons.append(python)
        env = _lane_env()
        # the comparison's own tests first: verdicts from a comparison that cannot see a lost moment mean nothing
        session.run(pythons[1], "-m", "pytest", "tests/ckpt", "-q", "-p", "no:cacheprovider", external=True, env=env)
        session.run(pythons[1], "tests/ckpt/lane.py", "pair", "--old", old.version, "--new", new.version,
                    "--old-python", pythons[0], "--new-python", pythons[1], "--backend", backend,
                    *session.posargs, external=True, env=env)

    session_fn.__doc__ = (f"checkpoint lane ({backend}): save on megatron-core {old.version}, load on {new.version}, "
                          "every optimizer byte compared" + (" (skipped without CUDA)" if gpu else ""))
    return session_fn


CKPT_PINS = _ckpt_pins(PINS)
for _pin in CKPT_PINS:
    for _gpu in (False, True):
        _venv = not _gpu or HAS_CUDA or os.environ.get("MCORE_COMPAT_GPU_FORCE") == "1"  # no empty venv to skip in
        nox.session(name=f"{'gpu-' if _gpu else ''}ckpt-venv-{_pin.version}", python=_pin.python if _venv else None,
                    venv_backend="uv" if _venv else "none", tags=["ckpt-venv", "requirement"])(_ckpt_venv_session(_pin, gpu=_gpu))
for _old, _new in zip(CKPT_PINS, CKPT_PINS[1:]):
    for _gpu in (False, True):
        _prefix = "gpu-" if _gpu else ""
        nox.session(name=f"{_prefix}ckpt-{_old.version}-to-{_new.version}", venv_backend="none",
                    requires=[f"{_prefix}ckpt-venv-{_old.version}", f"{_prefix}ckpt-venv-{_new.version}"],
                    tags=["gpu", "ckpt-gpu"] if _gpu else ["ckpt", "cpu"])(_ckpt_pair_session(_old, _new, gpu=_gpu))


# ------------------------------------------------------------------------------ equivalence lane
# The same tiny GPTModel, weights, batches and config on every pin from tests/equiv/expected.yaml's first_pin on:
# `equiv-<version>` trains it in that pin's lane venv (tag requirement: pulled in by `equiv`, never a CI job of its
# own); `equiv` (tags equiv, cpu) compares adjacent pins bit for bit and writes equivalence.* under the ignored
# benchmarks/results/raw/ (`nox -s equiv -- --record`: benchmarks/results/, tracked; tools/results.py).
# A pin from the checkpoint lane's first saver on shares its ckpt-venv-<version>; older lane pins get equiv-venv-.
def _equiv_pins(pins) -> list:
    import yaml

    from compat.version import at_least

    with open(ROOT / "tests" / "equiv" / "expected.yaml", encoding="utf-8") as fh:
        first = yaml.safe_load(fh)["first_pin"]
    return [pin for pin in pins if at_least(pin.version, first)]


def _equiv_venv(pin) -> str:
    return f"ckpt-venv-{pin.version}" if pin in CKPT_PINS else f"equiv-venv-{pin.version}"


def _equiv_pin_session(pin):
    def session_fn(session: nox.Session) -> None:
        python = CKPT_PYTHON.get(f"gloo:{pin.version}")
        if python is None:
            session.error(f"the lane venv of {pin.version} was not built in this run (was --no-deps given?)")
        session.run(python, "tests/equiv/lane.py", "pin", "--version", pin.version, "--python", python,
                    *session.posargs, external=True, env=_lane_env())

    session_fn.__doc__ = f"equivalence lane: train the lane's GPTModel on megatron-core {pin.version} (2 gloo ranks)"
    return session_fn


def _equiv_compare_session(pins):
    def session_fn(session: nox.Session) -> None:
        python = CKPT_PYTHON.get(f"gloo:{pins[-1].version}")
        env = _lane_env()
        session.run(python, "-m", "pytest", "tests/equiv", "-q", "-p", "no:cacheprovider", external=True, env=env)
        session.run(python, "tests/equiv/lane.py", "compare", "--require-all", *session.posargs, external=True,
                    env=env)

    session_fn.__doc__ = ("equivalence lane: adjacent pins compared bit for bit (loss, grads, grad norm, zeros, "
                          "params per step; buffer and optimizer bytes), against tests/equiv/expected.yaml")
    return session_fn


EQUIV_PINS = _equiv_pins(PINS)
for _pin in EQUIV_PINS:
    if _pin not in CKPT_PINS:  # the same recipe as a checkpoint-lane venv
        _fn = _ckpt_venv_session(_pin, gpu=False)
        _fn.__doc__ = f"equivalence-lane venv of megatron-core {_pin.version}: the pin's recipe + psutil"
        nox.session(name=f"equiv-venv-{_pin.version}", python=_pin.python, venv_backend="uv",
                    tags=["equiv-venv", "requirement"])(_fn)
    nox.session(name=f"equiv-{_pin.version}", venv_backend="none", requires=[_equiv_venv(_pin)],
                tags=["equiv-pin", "requirement"])(_equiv_pin_session(_pin))
if EQUIV_PINS:
    nox.session(name="equiv", venv_backend="none", requires=[f"equiv-{p.version}" for p in EQUIV_PINS],
                tags=["equiv", "cpu"])(_equiv_compare_session(EQUIV_PINS))


# ------------------------------------------------------------------------------ plain-install check
# `pip install megatron-core==X` as a user does it: declared dependencies, no extras, the pin's CPU torch, into a
# fresh venv; then import megatron.core and the modules the contract tests use (tests/smoke/probe.py). The outcome
# is compared with compat/tooling/data/install.json (tools/smoke.py): a change either way fails the session
# (`nox -s smoke-X -- --record` records the new outcome). Tag `smoke`, not `cpu`: CI runs them in their own jobs.
def make_smoke_session(pin):
    def session_fn(session: nox.Session) -> None:
        _require_uv()
        from compat.registry import registry
        from tools import smoke

        requires_python = registry().releases.get(pin.version, {}).get("requires_python")
        uv = nox.virtualenv.find_uv()[1]
        diffs = smoke.run(pin, python_exe=str(Path(session.bin) / "python"), uv=uv, index_args=index_args(),
                          requires_python=requires_python, record="--record" in session.posargs, log=session.log)
        if diffs:
            session.error(f"smoke-{pin.version}: the plain install differs from compat/tooling/data/install.json: "
                          + "; ".join(diffs))

    session_fn.__doc__ = (f"plain install of megatron-core {pin.version} (declared deps, no extras, torch {pin.torch})"
                          ", imports compared with compat/tooling/data/install.json")
    session_fn.__name__ = f"smoke_{pin.version.replace('.', '_')}"
    return session_fn


for _pin in PINS:
    nox.session(name=f"smoke-{_pin.version}", python=_pin.python, venv_backend="uv", reuse_venv=False,
                tags=["smoke"])(make_smoke_session(_pin))


def make_companions_session(pin):
    def session_fn(session: nox.Session) -> None:
        from tools import companion_install

        install_pin(session, pin, torch=pin.torch)
        uv = nox.virtualenv.find_uv()[1]
        companion_install.run_session(pin, list(session.posargs), python_exe=str(Path(session.bin) / "python"),
                                      uv=uv, index_args=index_args(), log=session.log)

    session_fn.__doc__ = (f"megatron-core {pin.version} + each companion's newest releases (megatron-bridge, ...), "
                          "installed as a user would, their megatron modules imported; -- --record keeps the cells")
    session_fn.__name__ = f"companions_{pin.version.replace('.', '_')}"
    return session_fn


for _pin in PINS:
    nox.session(name=f"companions-{_pin.version}", python=_pin.python, venv_backend="uv", tags=["companions"])(
        make_companions_session(_pin))


if __name__ == "__main__":  # `python noxfile.py` also works
    nox.main()

