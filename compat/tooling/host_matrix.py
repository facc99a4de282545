# SPDX-License-Identifier: Apache-2.0
"""The test matrix for a host project: our megatron-core pins, with their install recipes, and ``install_pin``.

A downstream project (verl, NeMo-RL, a Megatron-Bridge user) runs *its* tests on every pin from its own noxfile::

    from compat.tooling.host_matrix import install_pin, load_pins

    for pin in load_pins():
        @nox.session(name=f"mcore-{pin.version}", python=pin.python)
        def tests(session, pin=pin):
            install_pin(session, pin, deps=["pytest", "."])
            session.run("pytest", "tests")

``load_pins()`` reads the copy of our matrix.yaml packaged as ``compat/tooling/data/pins.json`` (a unit test keeps
the two equal; ``python tools/matrix.py --write-pins-json`` regenerates it), or a host's own copy: a ``.json`` file
of the same shape, or a ``.yaml``/``.yml`` file shaped like matrix.yaml when PyYAML is installed. No PyYAML is needed
otherwise. ``install_pin`` is the mechanism our own noxfile.py uses: uv (nox's uv backend) for torch, the extras and
the host's deps, then megatron-core per the recipe (``--no-deps``; pip for ``--ignore-requires-python``, which uv
lacks). ``install_steps`` returns those commands without running them. pip.conf's indexes, find-links and constraint
are passed on to uv, which ignores pip.conf (``index_args``).
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

__all__ = ["HostMatrixError", "HostPin", "InstallStep", "PinRecipe", "find_pin", "index_args", "install_pin",
           "install_steps", "load_pins", "pins_from_data", "pins_to_data"]

PACKAGED = "pins.json"
MAX_BYTES = 1 << 20
FIELDS = {"version": str, "python": str, "torch": str, "no_deps": bool, "ignore_requires_python": bool,
          "extra": list, "tags": list, "note": str}
REQUIRED = ("version", "python", "torch")
_VERSION_RE = re.compile(r"^\d+(\.\d+)+([a-z]+\d*)?(\.post\d+)?(\.dev\d+)?$")
_PYTHON_RE = re.compile(r"^3\.\d+$")


class HostMatrixError(ValueError):
    """Bad pin data or a bad request: names the field, the value and what is supported."""

    def __init__(self, field: str, value: object, supported: str, *, where: str = "") -> None:
        self.field, self.value, self.supported, self.where = field, value, supported, where
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{field}={value!r} is not supported; supported: {supported}")


class PinRecipe(Protocol):
    """What ``install_steps`` reads of a pin (our tools/matrix.Pin and HostPin both have it)."""

    version: str
    torch: str
    no_deps: bool
    ignore_requires_python: bool
    extra: tuple[str, ...]


@dataclass(frozen=True)
class HostPin:
    """One megatron-core pin and its install recipe (the keys of matrix.yaml)."""

    version: str
    python: str
    torch: str
    no_deps: bool = False
    ignore_requires_python: bool = False
    extra: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    note: str = ""

    @property
    def megatron_requirement(self) -> str:
        return f"megatron-core=={self.version}"

    @property
    def torch_requirement(self) -> str:
        return f"torch=={self.torch}"


@dataclass(frozen=True)
class InstallStep:
    """One install command: ``tool`` "uv" (``session.install``, i.e. ``uv pip install``) or "pip" (the venv's
    ``python -m pip install``); ``args`` what follows ``install``."""

    tool: str
    args: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        """The command line as it runs in the session's venv."""
        head = ["uv", "pip", "install"] if self.tool == "uv" else ["python", "-m", "pip", "install"]
        return [*head, *self.args]


# ------------------------------------------------------------------------------------------- pins
def pins_to_data(pins: list[Any]) -> dict[str, Any]:
    """The JSON document of ``pins`` (any objects with the matrix.yaml keys as attributes)."""
    return {"format": 1, "source": "matrix.yaml",
            "pins": [{k: list(getattr(p, k)) if FIELDS[k] is list else getattr(p, k) for k in FIELDS} for p in pins]}


def pins_from_data(doc: object, *, where: str = "pins") -> list[HostPin]:
    """Validated pins from a parsed document ``{"pins": [{...}, ...]}`` (the JSON copy or matrix.yaml)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("pins"), list) or not doc["pins"]:
        raise HostMatrixError("pins", type(doc).__name__ if not isinstance(doc, dict) else doc.get("pins"),
                              "a mapping whose 'pins' is a non-empty list of pin mappings", where=where)
    pins = [_pin(raw, f"{where}: pin #{i}") for i, raw in enumerate(doc["pins"], start=1)]
    seen: set[str] = set()
    for pin in pins:
        if pin.version in seen:
            raise HostMatrixError("version", pin.version, "each version once", where=where)
        seen.add(pin.version)
    return pins


def _pin(raw: object, where: str) -> HostPin:
    if not isinstance(raw, dict):
        raise HostMatrixError("pin", raw, f"a mapping with keys {sorted(FIELDS)}", where=where)
    for key in raw:
        if key not in FIELDS:
            raise HostMatrixError(str(key), raw[key], f"the keys {sorted(FIELDS)}", where=where)
    for key in REQUIRED:
        if not raw.get(key):
            raise HostMatrixError(key, raw.get(key), "a non-empty string (required)", where=where)
    values: dict[str, Any] = {}
    for key, kind in FIELDS.items():
        if key not in raw or raw[key] is None:
            continue
        value = raw[key]
        if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
            raise HostMatrixError(key, value, "a list of strings" if kind is list else f"a {kind.__name__}",
                                  where=where)
        values[key] = tuple(value) if kind is list else value
    if not _VERSION_RE.match(values["version"]):
        raise HostMatrixError("version", values["version"], "a release like '0.19.2'", where=where)
    if not _PYTHON_RE.match(values["python"]):
        raise HostMatrixError("python", values["python"], "a Python series like '3.11'", where=where)
    if values.get("ignore_requires_python") and not values.get("no_deps"):
        raise HostMatrixError("ignore_requires_python", True, "only with no_deps: true", where=where)
    return HostPin(**{k: v.strip() if isinstance(v, str) else v for k, v in values.items()})


def load_pins(path: str | os.PathLike[str] | None = None) -> list[HostPin]:
    """Our pins (the packaged copy of matrix.yaml), or those of a host's ``.json`` / ``.yaml`` file."""
    if path is None:
        text = resources.files(__package__).joinpath("data", PACKAGED).read_text(encoding="utf-8")
        return pins_from_data(json.loads(text), where=f"compat/tooling/data/{PACKAGED}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise HostMatrixError("path", str(path), "a .json file, or a .yaml/.yml file with PyYAML installed")
    try:
        if path.stat().st_size > MAX_BYTES:
            raise HostMatrixError("path", str(path), f"a file of at most {MAX_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HostMatrixError("path", str(path), f"a readable file ({exc.strerror})") from None
    if suffix == ".json":
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise HostMatrixError("path", str(path), f"valid JSON ({exc})") from None
    else:
        try:
            import yaml
        except ImportError:
            raise HostMatrixError("path", str(path), "a .json file (PyYAML is not installed)") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise HostMatrixError("path", str(path), f"valid YAML ({exc})") from None
    return pins_from_data(doc, where=str(path))


def find_pin(pins: list[HostPin], version: str) -> HostPin:
    """The pin of ``version``; a HostMatrixError lists the pinned versions otherwise."""
    for pin in pins:
        if pin.version == version:
            return pin
    raise HostMatrixError("version", version, ", ".join(p.version for p in pins))


# ------------------------------------------------------------------------------------ pip.conf, uv
def _pip_config_lines() -> list[str]:
    """`pip config list` output, from the first pip that answers (nox's own venv may have none)."""
    candidates = [[sys.executable, "-m", "pip"]]
    candidates += [[found] for found in map(shutil.which, ("pip3", "pip")) if found]
    candidates += [[found, "-m", "pip"] for found in map(shutil.which, ("python3", "python")) if found]
    for cmd in candidates:
        try:
            out = subprocess.run([*cmd, "config", "list"], capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0:
            return out.stdout.splitlines()
    return []


def parse_pip_config(lines: list[str]) -> dict[str, list[str]]:
    """find-links, index-url, extra-index-url and constraint from `pip config list` lines (``scope.key='value'``;
    list values whitespace separated; index-url: the last scope printed wins; lists merged). Folders and files
    that do not exist here are dropped (pip.conf from another machine must not make uv fail)."""
    seen: dict[str, list[str]] = {"find-links": [], "index-url": [], "extra-index-url": [], "constraint": []}
    for line in lines:
        if "=" not in line:
            continue
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name not in seen:
            continue
        for item in value.strip().strip("'\"").split():
            if name == "index-url":
                seen[name] = [item]
            elif item not in seen[name]:
                seen[name].append(item)
    seen["find-links"] = [p for p in seen["find-links"] if "://" in p or os.path.isdir(p)]
    seen["constraint"] = [p for p in seen["constraint"] if "://" in p or os.path.isfile(p)]
    return seen


@functools.cache
def pip_config() -> dict[str, list[str]]:
    return parse_pip_config(_pip_config_lines())


def index_args(config: dict[str, list[str]] | None = None, *, uv: bool = True) -> list[str]:
    """uv/pip arguments for pip.conf's find-links, indexes and constraint (``config``: default this machine's)."""
    cfg = pip_config() if config is None else config
    args: list[str] = []
    for flag, key in (("--find-links", "find-links"), ("--index-url", "index-url"),
                      ("--extra-index-url", "extra-index-url"), ("--constraint", "constraint")):
        for value in cfg.get(key, []):
            args += [flag, value]
    if uv and cfg.get("extra-index-url"):  # pip tries every index; uv stops at the first that has the package
        args += ["--index-strategy", "unsafe-best-match"]
    return args


# ---------------------------------------------------------------------------------------- install
def install_steps(pin: PinRecipe, *, torch: str | None = None, deps: tuple[str, ...] | list[str] = (),
                  index: list[str] | None = None) -> list[InstallStep]:
    """The install commands of ``pin``'s recipe: torch (``torch`` overrides the pin's, e.g. a CUDA build), the
    pin's extras and ``deps`` in one uv resolve (with megatron-core unless the recipe says no_deps), then
    megatron-core alone: ``uv --no-deps`` or, for ``ignore_requires_python``, the venv's pip (``index``:
    uv's index arguments, default :func:`index_args`; pip reads pip.conf itself)."""
    if not isinstance(pin.version, str) or not _VERSION_RE.match(pin.version):
        raise HostMatrixError("version", pin.version, "a release like '0.19.2'")
    if pin.ignore_requires_python and not pin.no_deps:
        raise HostMatrixError("ignore_requires_python", True, "only with no_deps: true")
    torch = pin.torch if torch is None else torch
    if not isinstance(torch, str) or not torch.strip() or any(c in torch for c in " <>=!~,;"):
        raise HostMatrixError("torch", torch, "one exact version like '2.13.0+cpu'")
    index = index_args() if index is None else list(index)
    megatron = f"megatron-core=={pin.version}"
    base = [f"torch=={torch}", *pin.extra, *deps]
    if pin.ignore_requires_python:
        base.append("pip")  # uv has no --ignore-requires-python: the venv's own pip does that one step
    if not pin.no_deps:
        base.append(megatron)  # resolved together with torch and the extras
    steps = [InstallStep("uv", (*index, *base))]
    if pin.ignore_requires_python:
        steps.append(InstallStep("pip", ("--disable-pip-version-check", "--no-deps", "--ignore-requires-python",
                                         megatron)))
    elif pin.no_deps:
        steps.append(InstallStep("uv", (*index, "--no-deps", megatron)))
    return steps


def install_pin(session: Any, pin: PinRecipe, *, torch: str | None = None,
                deps: tuple[str, ...] | list[str] = (), steps: list[InstallStep] | None = None) -> list[InstallStep]:
    """Install ``pin`` (torch, extras, megatron-core per its recipe) and ``deps`` into the nox ``session``; returns
    the steps run. ``steps``: run these (from :func:`install_steps`) instead of building them again."""
    if steps is None:
        uv = getattr(session, "venv_backend", "uv") == "uv"
        steps = install_steps(pin, torch=torch, deps=deps, index=index_args(uv=uv))
    for step in steps:
        if step.tool == "uv":
            session.install(*step.args)
        else:
            session.run_install(*step.argv)
    return steps
