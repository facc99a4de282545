"""The only module that imports megatron: read the live DDPConfig and build real config objects."""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect

from . import version as _v
from .dtypes import is_torch_dtype
from .errors import CompatError, MegatronNotInstalledError
from .extract import DDP_CLASS, extract_class
from .registry import Field, Schema, registry

DDP_MODULE = "megatron.core.distributed"


def ddp_config_class():
    try:
        if importlib.util.find_spec("megatron") is None or importlib.util.find_spec("megatron.core") is None:
            raise ModuleNotFoundError("megatron.core")
        module = importlib.import_module(DDP_MODULE)
    except ModuleNotFoundError as exc:
        raise MegatronNotInstalledError(
            f"build_ddp_config needs megatron-core installed (import of {DDP_MODULE} failed: {exc}); "
            "use compat.ddp_kwargs(..., version=...) for registry-only kwargs") from None
    return module.DistributedDataParallelConfig


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
        return None, "<required>"
    if is_torch_dtype(value):
        return str(value).removeprefix("torch."), str(value)
    return (tuple(value) if isinstance(value, list) else value), repr(value)


def live_schema(cls=None) -> Schema:
    """The installed build's DDPConfig as a Schema: fields from ``dataclasses.fields``, checks from its source."""
    cls = cls or ddp_config_class()
    version = _v.installed_version() or "0+unknown"
    fields = []
    for f in dataclasses.fields(cls):
        default, text = _live_default(f)
        fields.append(Field(f.name, _annotation_text(f.type), default, text))
    reads, writes = _post_init_names(cls, version, tuple(f.name for f in fields))
    return Schema(version, "live", tuple(fields), reads, writes)


def _post_init_names(cls, version: str, names: tuple) -> tuple[frozenset, frozenset]:
    """Names __post_init__ reads/writes: the registry's when it describes this exact build, else the source's."""
    reg = registry()
    if version in reg.releases and reg.schema(version).names == names:
        known = reg.schema(version)
        return known.post_init_reads, known.post_init_writes
    for klass in inspect.getmro(cls):
        if "__post_init__" in vars(klass):
            try:
                facts = extract_class(inspect.getsource(inspect.getmodule(klass)), klass.__name__)
            except (OSError, TypeError, CompatError):
                continue
            return frozenset(facts["post_init_reads"]), frozenset(facts["post_init_writes"])
    return frozenset(), frozenset()


def build_ddp_config(overrides=None, optimizer_config=None, *, lenient: bool = False, cls=None):
    """A NEW DistributedDataParallelConfig for the installed megatron-core on every call.

    DistributedDataParallel.__init__ rewrites ``bucket_size`` on the object it is given, so never share one.
    ``cls`` may name a subclass (for example Megatron-Bridge's) to instantiate instead.
    """
    from .resolve import materialize, resolve

    cls = cls or ddp_config_class()
    schema = live_schema(cls)
    resolution = resolve(overrides, optimizer_config, schema=schema, lenient=lenient)
    kwargs = materialize(resolution.kwargs)
    config = cls(**kwargs)
    changed = {k: (v, getattr(config, k)) for k, v in kwargs.items() if getattr(config, k) != v}
    if changed:
        raise CompatError(f"DistributedDataParallelConfig.__post_init__ changed values it was given: {changed}")
    return config


__all__ = ["DDP_CLASS", "build_ddp_config", "ddp_config_class", "live_schema"]
