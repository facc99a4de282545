"""Load, validate and extend matrix.yaml: the megatron-core releases the test matrix pins.

Repo tooling, not part of the vendorable ``compat`` package: it needs PyYAML. The data lives in
matrix.yaml, the install mechanism in noxfile.py; this module only says what a valid pin is.

    load_matrix(path)            -> list[Pin], oldest first; raises a MatrixError subclass on bad data
    add_pin(version, ...)        appends (or bumps) a pin in matrix.yaml, keeping its comments

Run ``python -m tools.matrix`` to validate the file and print the pins, and ``python -m tools.matrix gate
CANDIDATE [--matrix PATH] [--accept]`` for the upgrade gate with the test matrix: a registry release is compared with
the pin before it, and ``--accept`` pins the accepted release here (``MatrixTools``: the package's gate knows no
matrix.yaml).
"""
from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

from packaging.requirements import InvalidRequirement, Requirement  # noqa: E402

from compat.errors import CompatError, one_line  # noqa: E402
from compat.tooling.archive import MIB, read_file  # noqa: E402
from compat.tooling.fsutil import atomic_write_text, locked  # noqa: E402
from compat.tooling.gate.registry_file import read_registry  # noqa: E402
from compat.tooling.host_matrix import HostPin  # noqa: E402
from compat.version import parse, sorted_versions  # noqa: E402

DEFAULT_MATRIX = ROOT / "matrix.yaml"
DEFAULT_REGISTRY = ROOT / "compat" / "data" / "registry.json"
DEFAULT_PINS_JSON = ROOT / "compat" / "tooling" / "data" / "pins.json"  # matrix.yaml for hosts (host_matrix)
MAX_MATRIX_BYTES = 1 * MIB  # 13 pins take 4 kB

TOP_KEYS = {"pins"}
REQUIRED_KEYS = ("version", "python", "torch")
OPTIONAL_KEYS = {
    "no_deps": False,
    "ignore_requires_python": False,
    "extra": (),
    "tags": (),
    "note": "",
}
ALL_KEYS = set(REQUIRED_KEYS) | set(OPTIONAL_KEYS)
# Derived by load_matrix; writing them in matrix.yaml would let them go stale.
RESERVED_TAGS = {"cpu", "gpu", "oldest", "newest"}
RESERVED_TAG_RE = re.compile(r"^(mcore-.*|py\d+)$")
TAG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
PYTHON_RE = re.compile(r"^3\.\d+$")


# ----------------------------------------------------------------------------------------- errors
class MatrixError(ValueError):
    """Bad matrix.yaml. ``entry`` names the pin (its version, or its position), ``key`` the key."""

    def __init__(self, message: str, *, entry: str | None = None, key: str | None = None, path=None):
        self.entry, self.key, self.path, self.detail = entry, key, path, message
        where = [str(path) if path else "matrix.yaml"]
        if entry is not None:
            where.append(f"pin {entry}")
        if key is not None:
            where.append(f"key {key!r}")
        super().__init__(": ".join(where) + ": " + message)


class MatrixSyntaxError(MatrixError):
    """Not YAML, duplicate mapping keys, or not the expected shape."""


class UnknownKeyError(MatrixError):
    pass


class MissingKeyError(MatrixError):
    pass


class UnknownVersionError(MatrixError):
    """The pinned version is not a release in the registry."""


class YankedVersionError(MatrixError):
    pass


class DuplicatePinError(MatrixError):
    """The same version twice, or two pins of one minor series."""


class RecipeError(MatrixError):
    """A bad value: an inconsistent install recipe, a bad type, tag, torch spec or note."""


# ------------------------------------------------------------------------------------------- data
@dataclasses.dataclass(frozen=True)
class Pin(HostPin):
    """A pin as our own matrix tools see it: a host's pin (``tags`` as written in matrix.yaml) and the tags
    load_matrix derives."""

    derived_tags: tuple[str, ...] = ()  # cpu/py311/oldest/newest/mcore-<v>, set by load_matrix

    @property
    def series(self) -> tuple[int, int]:
        return parse(self.version).release[:2]

    @property
    def plain(self) -> bool:
        return not (self.no_deps or self.ignore_requires_python or self.extra)

    @property
    def python_tag(self) -> str:
        return "py" + self.python.replace(".", "")

    def all_tags(self, *, kind: str = "cpu") -> list[str]:
        """The nox tags of this pin's session of ``kind`` ("cpu" or "gpu")."""
        derived = [t for t in self.derived_tags if t != "cpu"]
        return [kind, *derived, *self.tags]


# ------------------------------------------------------------------------------------------- yaml
class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise MatrixSyntaxError(
                f"duplicate key {key!r} (lines {seen[key] + 1} and {key_node.start_mark.line + 1})", key=str(key))
        seen[key] = key_node.start_mark.line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_registry(path=DEFAULT_REGISTRY) -> dict[str, dict]:
    """{version: release record} from compat/data/registry.json (read bounded and shape-checked)."""
    data, _raw = read_registry(path)
    return {r["version"]: r for r in data["releases"]}


def read_matrix_text(path) -> str:
    """matrix.yaml's text, read bounded (a regular file of at most MAX_MATRIX_BYTES, UTF-8)."""
    raw = read_file(path, MAX_MATRIX_BYTES, "matrix file", error=MatrixError)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixSyntaxError(f"not UTF-8 text: {exc}", path=path) from None


def parse_matrix_text(text: str, *, registry: dict[str, dict], path=None) -> list[Pin]:
    try:
        doc = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except MatrixSyntaxError as exc:  # from _construct_mapping, which does not know the path
        raise MatrixSyntaxError(exc.detail, key=exc.key, path=path) from None
    except yaml.YAMLError as exc:
        raise MatrixSyntaxError(f"not valid YAML: {exc}", path=path) from None
    except RecursionError:
        raise MatrixSyntaxError("not valid YAML: nested too deeply", path=path) from None
    if not isinstance(doc, dict):
        raise MatrixSyntaxError("the top level must be a mapping with a 'pins' list", path=path)
    for key in doc:
        if key not in TOP_KEYS:
            raise UnknownKeyError(f"unknown top-level key (known: {sorted(TOP_KEYS)})", key=str(key), path=path)
    entries = doc.get("pins")
    if not isinstance(entries, list) or not entries:
        raise MatrixSyntaxError("'pins' must be a non-empty list", key="pins", path=path)

    by_norm = {parse(v): v for v in registry}
    pins: list[Pin] = []
    for index, raw in enumerate(entries, start=1):
        pins.append(_validate_entry(raw, index, by_norm, registry, path))

    seen_versions: dict = {}
    seen_series: dict = {}
    for pin in pins:
        v = parse(pin.version)
        if v in seen_versions:
            raise DuplicatePinError("pinned twice", entry=pin.version, key="version", path=path)
        seen_versions[v] = pin
        if pin.series in seen_series:
            raise DuplicatePinError(
                f"one pin per minor series: {seen_series[pin.series].version} and {pin.version} are both "
                f"{pin.series[0]}.{pin.series[1]}.x", entry=pin.version, key="version", path=path)
        seen_series[pin.series] = pin

    ordered = sorted_versions([p.version for p in pins])
    oldest, newest = ordered[0], ordered[-1]
    by_version = {p.version: p for p in pins}
    out = []
    for version in ordered:
        pin = by_version[version]
        derived = ["cpu", pin.python_tag, f"mcore-{pin.version}"]
        if version == oldest:
            derived.append("oldest")
        if version == newest:
            derived.append("newest")
        out.append(dataclasses.replace(pin, derived_tags=tuple(derived)))
    return out


def _validate_entry(raw, index: int, by_norm: dict, registry: dict, path) -> Pin:
    entry = f"#{index}"
    if not isinstance(raw, dict):
        raise MatrixSyntaxError(f"must be a mapping, got {type(raw).__name__}", entry=entry, path=path)
    # Name the entry by its version as soon as there is one, so every message says which pin.
    if isinstance(raw.get("version"), str):
        entry = f"{raw['version']} (#{index})"
    for key in raw:
        if key not in ALL_KEYS:
            raise UnknownKeyError(f"unknown key (known: {sorted(ALL_KEYS)})", entry=entry, key=str(key), path=path)
    for key in REQUIRED_KEYS:
        if key not in raw or raw[key] in (None, ""):
            raise MissingKeyError("is required", entry=entry, key=key, path=path)

    def need_str(key):
        value = raw[key]
        if not isinstance(value, str):
            raise RecipeError(
                f"must be a quoted string, got {type(value).__name__} {value!r}"
                " (YAML reads 0.10 or 3.10 as a float)", entry=entry, key=key, path=path)
        return value.strip()

    version = need_str("version")
    try:
        norm = parse(version)
    except ValueError as exc:
        raise UnknownVersionError(str(exc), entry=entry, key="version", path=path) from None
    if norm not in by_norm:
        raise UnknownVersionError(
            f"{version} is not a megatron-core release in the registry (compat/data/registry.json)",
            entry=entry, key="version", path=path)
    version = by_norm[norm]
    if registry[version].get("yanked"):
        raise YankedVersionError(f"{version} is yanked on PyPI; pin another patch of its series",
                                 entry=entry, key="version", path=path)

    python = need_str("python")
    if not PYTHON_RE.match(python):
        raise RecipeError(f"{python!r} is not a Python series like \"3.11\"", entry=entry, key="python", path=path)

    torch = need_str("torch")
    try:
        tv = parse(torch)
    except ValueError:
        raise RecipeError(f"{torch!r} is not an exact torch version like \"2.13.0+cpu\"",
                          entry=entry, key="torch", path=path) from None
    if str(tv) != torch or len(tv.release) < 3:
        raise RecipeError(f"{torch!r} must be one exact version like \"2.13.0+cpu\", not a range",
                          entry=entry, key="torch", path=path)
    if tv.local is None:
        raise RecipeError(f"{torch!r} has no local label (+cpu, +cu130...): a bare version can pull the "
                          "CUDA build from PyPI silently", entry=entry, key="torch", path=path)

    flags = {}
    for key in ("no_deps", "ignore_requires_python"):
        value = raw.get(key, OPTIONAL_KEYS[key])
        if not isinstance(value, bool):
            raise RecipeError(f"must be true or false, got {value!r}", entry=entry, key=key, path=path)
        flags[key] = value
    if flags["ignore_requires_python"] and not flags["no_deps"]:
        raise RecipeError("ignore_requires_python needs no_deps: true (pip can only skip the Requires-Python "
                          "check safely for a --no-deps install)", entry=entry, key="ignore_requires_python",
                          path=path)

    extra = raw.get("extra", [])
    if extra is None:
        extra = []
    if not isinstance(extra, list):
        raise RecipeError(f"must be a list of requirements, got {type(extra).__name__} {extra!r}",
                          entry=entry, key="extra", path=path)
    names = set()
    for item in extra:
        if not isinstance(item, str):
            raise RecipeError(f"unknown extra type {type(item).__name__} {item!r}: each extra is a PEP 508 "
                              "requirement string", entry=entry, key="extra", path=path)
        try:
            req = Requirement(item)
        except InvalidRequirement as exc:
            raise RecipeError(f"{item!r} is not a PEP 508 requirement: {exc}", entry=entry, key="extra",
                              path=path) from None
        name = req.name.lower().replace("_", "-")
        if name in ("torch", "megatron-core"):
            raise RecipeError(f"{item!r}: torch and megatron-core come from the torch and version keys",
                              entry=entry, key="extra", path=path)
        if name in names:
            raise RecipeError(f"{req.name} listed twice", entry=entry, key="extra", path=path)
        names.add(name)

    tags = raw.get("tags", [])
    if tags is None:
        tags = []
    if not isinstance(tags, list):
        raise RecipeError(f"must be a list, got {type(tags).__name__}", entry=entry, key="tags", path=path)
    for tag in tags:
        if not isinstance(tag, str) or not TAG_RE.match(tag):
            raise RecipeError(f"{tag!r} is not a tag (lowercase letters, digits, . _ -)", entry=entry,
                              key="tags", path=path)
        if tag in RESERVED_TAGS or RESERVED_TAG_RE.match(tag):
            raise RecipeError(f"{tag!r} is derived automatically; do not write it", entry=entry, key="tags",
                              path=path)
    if len(set(tags)) != len(tags):
        raise RecipeError("a tag is listed twice", entry=entry, key="tags", path=path)

    note = raw.get("note", "")
    if note is None:
        note = ""
    if not isinstance(note, str) or "\n" in note.strip():
        raise RecipeError("must be one line of text", entry=entry, key="note", path=path)
    note = note.strip()
    if not note and (flags["no_deps"] or flags["ignore_requires_python"] or extra):
        raise RecipeError("a recipe that deviates from a plain install needs a note saying why",
                          entry=entry, key="note", path=path)

    return Pin(version=version, python=python, torch=torch, no_deps=flags["no_deps"],
               ignore_requires_python=flags["ignore_requires_python"], extra=tuple(extra), tags=tuple(tags),
               note=note)


def load_matrix(path=DEFAULT_MATRIX, *, registry_path=DEFAULT_REGISTRY) -> list[Pin]:
    """The validated pins of ``path``, oldest first. Raises a MatrixError subclass on bad data."""
    path = Path(path)
    return parse_matrix_text(read_matrix_text(path), registry=load_registry(registry_path), path=path)


# ---------------------------------------------------------------------------------------- add_pin
def _yaml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid double-quoted YAML scalar


def render_pin(pin: Pin) -> str:
    extra = ", ".join(_yaml_str(e) for e in pin.extra)
    tags = ", ".join(_yaml_str(t) for t in pin.tags)
    return (
        f"  - version: {_yaml_str(pin.version)}\n"
        f"    python: {_yaml_str(pin.python)}\n"
        f"    torch: {_yaml_str(pin.torch)}\n"
        f"    no_deps: {'true' if pin.no_deps else 'false'}\n"
        f"    ignore_requires_python: {'true' if pin.ignore_requires_python else 'false'}\n"
        f"    extra: [{extra}]\n"
        f"    tags: [{tags}]\n"
        f"    note: {_yaml_str(pin.note)}\n"
    )


def add_pin(version: str, *, python: str | None = None, torch: str | None = None, no_deps: bool | None = None,
            ignore_requires_python: bool | None = None, extra=None, tags=None, note: str | None = None,
            path=DEFAULT_MATRIX, registry_path=DEFAULT_REGISTRY, replace_series: bool = True) -> str:
    """Add ``version`` to matrix.yaml, editing the text so comments and layout survive.

    - A newer patch of an already pinned minor series replaces that pin's version in place and keeps its
      recipe (one pin per series) unless recipe keys are given; with ``replace_series=False`` it is an error.
    - A new series is appended at the end. Recipe keys not given are copied from the newest pin (a new
      release most likely installs like the previous one), and its note says so unless ``note`` is given.

    The edited text is validated before it is written, atomically, under a lock beside matrix.yaml (concurrent
    add_pin calls are serialised); returns "replaced <old>" or "appended".
    """
    path = Path(path)
    with locked(path):
        return _add_pin(version, path, registry_path, replace_series, dict(
            python=python, torch=torch, no_deps=no_deps, ignore_requires_python=ignore_requires_python, extra=extra,
            tags=tags, note=note))


def _add_pin(version: str, path: Path, registry_path, replace_series: bool, recipe: dict) -> str:
    registry = load_registry(registry_path)
    text = read_matrix_text(path)
    pins = parse_matrix_text(text, registry=registry, path=path)
    new = parse(version)
    for pin in pins:
        if parse(pin.version) == new:
            raise DuplicatePinError("is already pinned", entry=pin.version, key="version", path=path)
    same_series = [p for p in pins if p.series == new.release[:2]]
    given = {k: v for k, v in recipe.items() if v is not None}

    if same_series:
        old = same_series[0]
        if not replace_series:
            raise DuplicatePinError(f"{old.version} already pins the {new.release[0]}.{new.release[1]} series",
                                    entry=version, key="version", path=path)
        if parse(old.version) > new:
            raise DuplicatePinError(f"older than the pinned {old.version} of its series", entry=version,
                                    key="version", path=path)
        template = dataclasses.replace(old, version=version, **{k: tuple(v) if k in ("extra", "tags") else v
                                                                for k, v in given.items()})
        block_re = re.compile(r"^  - version: [\"']?" + re.escape(old.version) + r"[\"']?[ \t]*\n"
                              r"(?:(?!  - )(?:    .*|[ \t]*)\n)*", re.MULTILINE)
        m = block_re.search(text if text.endswith("\n") else text + "\n")
        if not m:
            raise MatrixSyntaxError(f"cannot find the block of pin {old.version} to replace "
                                    "(expected `  - version: ...` at two spaces)", path=path)
        source = text if text.endswith("\n") else text + "\n"
        block = m.group(0)
        trailing = block[len(block.rstrip("\n")) + 1:]  # keep the blank line(s) between pins
        new_text = source[:m.start()] + render_pin(template) + trailing + source[m.end():]
        result = f"replaced {old.version}"
    else:
        base = pins[-1]
        copied = not ({"no_deps", "ignore_requires_python", "extra", "note"} & set(given))
        fields = dict(python=base.python, torch=base.torch, no_deps=base.no_deps,
                      ignore_requires_python=base.ignore_requires_python, extra=base.extra, tags=base.tags,
                      note=(f"recipe copied from {base.version} by add_pin: {base.note}" if copied else base.note))
        fields.update({k: tuple(v) if k in ("extra", "tags") else v for k, v in given.items()})
        template = Pin(version=version, **fields)
        source = text.rstrip("\n") + "\n"
        new_text = source + "\n" + render_pin(template)
        result = "appended"

    parse_matrix_text(new_text, registry=registry, path=path)  # never write a matrix that does not load
    atomic_write_text(path, new_text)
    return result


def pins_json_text(pins: list[Pin]) -> str:
    """The packaged JSON copy of ``pins`` that compat.tooling.host_matrix reads (no PyYAML needed there)."""
    from compat.tooling.host_matrix import pins_to_data

    return json.dumps(pins_to_data(pins), indent=1) + "\n"


class MatrixTools:
    """What the package's ``gate`` command asks of the test matrix (``compat.tooling.gate.cli.register``)."""

    @staticmethod
    def pinned(matrix_path: Path | None, registry_path: Path | None) -> list[str] | None:
        """The pinned versions, oldest first; None when matrix.yaml cannot be read (the gate then compares with the
        newest registry release)."""
        from compat.tooling.fsutil import same_file

        if matrix_path is not None and same_file(registry_path or DEFAULT_REGISTRY, matrix_path):
            raise CompatError(f"--registry and --matrix both name {str(matrix_path)!r}; nothing was written")
        try:
            return [p.version for p in load_matrix(matrix_path or DEFAULT_MATRIX,
                                                   registry_path=registry_path or DEFAULT_REGISTRY)]
        except (OSError, ValueError):
            return None

    @staticmethod
    def pinner(matrix_path: Path | None, registry_path: Path | None):
        def pin(version: str, registry: Path) -> str:
            try:
                return add_pin(version, path=matrix_path or DEFAULT_MATRIX, registry_path=registry)
            except DuplicatePinError as exc:
                return f"not changed: {exc}"
        return pin


def main(argv=None) -> int:
    import argparse

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["gate"]:
        from compat.tooling.cli import main as compat_main

        return compat_main(argv, matrix_tools=MatrixTools())

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(DEFAULT_MATRIX))
    ap.add_argument("--json", action="store_true", help="print the pins as JSON")
    ap.add_argument("--write-pins-json", action="store_true",
                    help=f"write the pins to {DEFAULT_PINS_JSON.relative_to(ROOT)} (the copy hosts read)")
    args = ap.parse_args(argv)
    try:
        pins = load_matrix(args.path)
    except (MatrixError, CompatError) as exc:
        print("error: " + one_line(exc), file=sys.stderr)
        return 1
    if args.write_pins_json:
        atomic_write_text(DEFAULT_PINS_JSON, pins_json_text(pins))
        print(f"wrote {len(pins)} pins to {DEFAULT_PINS_JSON}")
    elif args.json:
        print(json.dumps([dataclasses.asdict(p) for p in pins], indent=2))
    else:
        for p in pins:
            print(f"{p.version:8} python {p.python} torch {p.torch:12} {' '.join(p.all_tags())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
