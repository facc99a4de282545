# SPDX-License-Identifier: Apache-2.0
"""The only module that imports megatron: read live config dataclasses and build real config objects.

The live dataclass decides which fields exist (a dev build or a Megatron-Bridge subclass may have more than its
version's release). Its ``__post_init__`` checks come from the registry when the class is the release's own,
else from its source (``inspect`` + the same ``ast`` walk as the registry).
"""
from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import importlib.util
import inspect
import textwrap
import typing
import warnings
import weakref
from collections.abc import Mapping
from typing import Any

from . import version as _v
from .configs import CONFIGS, config_class
from .dtypes import is_torch_dtype
from .errors import CompatError, CompatWarning, InvalidValueError, MegatronNotInstalledError
from .registry import Field, Schema, check_from_record, registry, write_from_record


class PostInitChangedWarning(CompatWarning):
    """Megatron's ``__post_init__`` replaced a value that was passed (documented rewrites, e.g. pipeline_dtype)."""


def megatron_class(*, config: str):
    """The live class of ``config`` ("ddp", "optimizer", "transformer", "mla", ...)."""
    spec = config_class(config)
    try:
        if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("megatron.core") is None:
            raise ModuleNotFoundError("megatron.core")
        module = importlib.import_module(spec.module)
    except ModuleNotFoundError as exc:
        raise MegatronNotInstalledError(
            f"building {spec.class_name} needs megatron-core installed (import of {spec.module} failed: {exc}); "
            f"use compat.resolve(..., config={spec.key!r}, version=...) for registry-only kwargs") from None
    cls = getattr(module, spec.class_name, None)
    if cls is None:
        raise MegatronNotInstalledError(f"the installed megatron-core has no {spec.class_name} in {spec.module}")
    return cls


def config_of(cls) -> str:
    """The config key of a live class: the nearest known class in its MRO (a Bridge subclass is its base's)."""
    for klass in inspect.getmro(cls):
        for key, spec in CONFIGS.items():
            if klass.__name__ == spec.class_name and klass.__module__.startswith("megatron."):
                return key
    for klass in inspect.getmro(cls):  # a stand-in outside megatron with the same class name
        for key, spec in CONFIGS.items():
            if klass.__name__ == spec.class_name:
                return key
    raise CompatError(f"{cls.__name__} is not one of the known config classes ({', '.join(CONFIGS)}) "
                      "nor a subclass of one")


def _annotation_text(tp) -> str:
    if isinstance(tp, str):
        return tp
    if isinstance(tp, type):
        return tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__name__}"
    return str(tp).replace("typing.", "")


def _live_default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return None, "<required>", True
    if is_torch_dtype(value):
        return str(value).removeprefix("torch."), str(value), False
    return value, repr(value), False


# A class object's dataclass fields and __post_init__ source do not change once it exists, so its Schema is read once
# per (class, config); weak keys let a class defined at run time (a test's, a Bridge provider's) go away.
_LIVE_SCHEMAS: weakref.WeakKeyDictionary[type, dict[str, Schema]] = weakref.WeakKeyDictionary()


def live_schema(cls: type | None = None, config: str | None = None) -> Schema:
    """A live class as a Schema: fields from ``dataclasses.fields``, ``__post_init__`` facts as data. The same
    object for the same class (so ``canonical`` caches on it too)."""
    cls = cls or megatron_class(config=config or "ddp")
    config = config or config_of(cls)
    per_class = _LIVE_SCHEMAS.setdefault(cls, {})
    if config not in per_class:
        per_class[config] = _read_live_schema(cls, config)
    return per_class[config]


def _read_live_schema(cls: type, config: str) -> Schema:
    version = _v.installed_version() or "0+unknown"
    fields = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        default, text, required = _live_default(f)
        fields.append(Field(f.name, _annotation_text(f.type), default, text, required=required, exact=not required,
                            enums=_enums_in(f.type)))
    post = _post_init(cls, config, version, tuple(f.name for f in fields), {f.name: f.annotation for f in fields})
    return Schema(version, "live", tuple(fields), frozenset(post["reads"]), frozenset(post["writes"]),
                  tuple(check_from_record(c) for c in post["checks"]), post["dynamic_writes"],
                  tuple(k.__name__ for k in inspect.getmro(cls)[1:] if dataclasses.is_dataclass(k)),
                  tuple(post["effects"]), post["enums"], config=config, class_name=cls.__name__)


def _post_init(cls, config: str, version: str, names: tuple, annotations: dict) -> dict:
    """The registry's facts when ``cls`` is exactly the release's class, else read from the live source."""
    reg = registry()
    spec = CONFIGS[config]
    if cls.__name__ == spec.class_name and cls.__module__.startswith("megatron.core."):
        if version in reg.releases and reg.has(version, config=config) and reg.schema(version, config=config).names == names:
            known = reg.schema(version, config=config)
            return {"reads": known.post_init_reads, "writes": known.post_init_writes,
                    "dynamic_writes": known.dynamic_writes,
                    "checks": [dataclasses.asdict(c) for c in known.checks], "effects": known.effects,
                    "enums": known.enums}
    return _post_init_from_source(cls, annotations)


def _post_init_from_source(cls, annotations: dict) -> dict:
    """``__post_init__`` facts read from the source of every class in ``cls``'s MRO that defines one (dataclass
    or mixin, in MRO order, as ``super().__post_init__()`` calls them)."""
    mro, enums = [], {}
    for klass in inspect.getmro(cls):
        if "__post_init__" not in vars(klass):
            continue
        node = _class_node(klass)
        if node is None:  # a __post_init__ we cannot read: it may set anything, so nothing is pre-checked
            return {"reads": (), "writes": (), "dynamic_writes": True, "checks": [], "effects": (), "enums": {}}
        mro.append(node)
        enums.update(_live_enums(node, getattr(inspect.getmodule(klass), "__dict__", {})))
    if not mro:
        return {"reads": (), "writes": (), "dynamic_writes": False, "checks": [], "effects": (), "enums": {}}
    from .postinit import post_init_facts

    facts = post_init_facts(mro, annotations, enums=enums)
    return {**facts, "effects": tuple(write_from_record(w) for w in facts["effects"])}


def _live_enums(node: ast.ClassDef, module_globals: dict) -> dict:
    """The Enum classes a live class's source names (``X.member``), as the registry keeps them: mixin, member
    values (a str or int, else None) and aliases, read from the real classes."""
    out = {}
    for n in ast.walk(node):
        if not (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)):
            continue
        real = module_globals.get(n.value.id)
        if not (isinstance(real, type) and issubclass(real, enum.Enum)) or n.value.id in out:
            continue
        mixin = "str" if issubclass(real, str) else "int" if issubclass(real, int) else None
        members = {name: m.value if type(m.value) in (str, int) else None for name, m in real.__members__.items()}
        aliases = {name: m.name for name, m in real.__members__.items() if m.name != name}
        out[n.value.id] = {"mixin": mixin, "members": members, "aliases": aliases}
    return out


def _class_node(klass) -> ast.ClassDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(klass))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, ValueError, IndentationError):
        return None
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    return node if node is not None and node.name == klass.__name__ else None


def _enums_in(tp, depth: int = 0) -> tuple:
    """(Enum class name, member names) of every Enum a live annotation names, as the registry records them."""
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return ((tp.__name__, tuple(tp.__members__)),)
    if depth > 8:
        return ()
    out = []
    for arg in getattr(tp, "__args__", ()) or ():
        out += [e for e in _enums_in(arg, depth + 1) if e not in out]
    return tuple(out)


def _enum_of(tp):
    """The Enum class a live field is annotated with (``AttnBackend``, ``Optional[AttnBackend]``, ``AttnBackend | None``), else None."""
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp
    # typing.get_origin, not __origin__: a PEP 604 ``AttnBackend | None`` (types.UnionType) has no __origin__.
    members = [a for a in getattr(tp, "__args__", ()) if a is not type(None)]
    if typing.get_origin(tp) is not None and len(members) == 1 and isinstance(members[0], type) \
            and issubclass(members[0], enum.Enum) and len(tp.__args__) == 2:
        return members[0]
    return None


def live_values(cls, kwargs: dict) -> dict:
    """A str naming a member of the live field's Enum becomes that member (``attention_backend="flash"`` ->
    ``AttnBackend.flash``, as Megatron's argparse does): the class compares with members, so a str would match
    none and be ignored. A str that names no member is refused."""
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    out = dict(kwargs)
    for name, value in kwargs.items():
        kind = _enum_of(types.get(name)) if isinstance(value, str) else None
        if kind is None:
            continue
        if value not in kind.__members__:
            raise InvalidValueError(name, value, f"must name a member of {kind.__name__}: "
                                                 f"{', '.join(kind.__members__)}")
        out[name] = kind[value]
    return out


def build_config(config: str | None = None, overrides: Mapping[str, Any] | None = None, *, cls: type | None = None,
                 lenient: bool = False, optimizer_config: Any = None) -> Any:
    """A NEW object of ``cls`` (default: megatron's class for ``config``) built from resolved overrides."""
    from .canonical import canonical
    from .kwargs import materialize
    from .resolution import resolve

    cls = cls or megatron_class(config=config or "ddp")
    key = config_class(config).key if config else config_of(cls)
    schema = live_schema(cls, key)
    resolution = resolve(overrides, optimizer_config, schema=schema, lenient=lenient)
    kwargs = live_values(cls, materialize(resolution.kwargs, canonical(registry(), schema, config=key)))
    obj = cls(**kwargs)
    changed = {}
    for name, value in kwargs.items():
        now = getattr(obj, name, value)
        try:
            same = bool(now == value) or now is value
        except Exception:  # arrays and other odd __eq__: identity only
            same = now is value
        if not same:
            changed[name] = (value, now)
    unexpected = {k: v for k, v in changed.items() if k not in schema.post_init_writes and not schema.dynamic_writes}
    if unexpected:
        raise CompatError(f"{schema.class_name}.__post_init__ changed values it was given: {unexpected}")
    if changed:
        warnings.warn(f"{schema.class_name}.__post_init__ replaced values it was given (passed, now): {changed}",
                      PostInitChangedWarning, stacklevel=3)
    return obj


def build_ddp_config(overrides: Mapping[str, Any] | None = None, optimizer_config: Any = None, *, lenient: bool = False,
                     cls: type | None = None) -> Any:
    """A NEW DistributedDataParallelConfig for the installed megatron-core on every call.

    DistributedDataParallel.__init__ rewrites ``bucket_size`` on the object it is given, so never share one.
    ``cls`` may name a subclass (for example Megatron-Bridge's) to instantiate instead.
    """
    return build_config("ddp", overrides, cls=cls, lenient=lenient, optimizer_config=optimizer_config)


def build_optimizer_config(overrides: Mapping[str, Any] | None = None, *, lenient: bool = False,
                           cls: type | None = None) -> Any:
    """A NEW OptimizerConfig (or ``cls``, e.g. AdamOptimizerConfig on 0.16-0.17) from resolved overrides."""
    return build_config("optimizer" if cls is None else None, overrides, cls=cls, lenient=lenient)


def build_transformer_config(overrides: Mapping[str, Any] | None = None, *, lenient: bool = False,
                             cls: type | None = None) -> Any:
    """A NEW TransformerConfig (or ``cls``: MLATransformerConfig, a Bridge provider class) from resolved overrides."""
    return build_config("transformer" if cls is None else None, overrides, cls=cls, lenient=lenient)


__all__ = ["PostInitChangedWarning", "build_config", "build_ddp_config", "build_optimizer_config",
           "build_transformer_config", "config_of", "live_schema", "live_values", "megatron_class"]
