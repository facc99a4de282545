"""mcore-compat: one place that knows every megatron-core config dataclass (DDP, optimizer, transformer).

Importing this package never imports torch or megatron, and imports no submodule either: the public names
below are loaded from their modules on first use (PEP 562), so ``import compat`` costs well under a
millisecond and each caller pays only for what it uses.
"""
import importlib
import sys
import types

__version__ = "0.1.0"

# Public name -> the submodule that defines it. Add new public names here (one line each).
_EXPORTS = {
    "build_ddp_config": "build",
    "live_schema": "build",
    "CandidateError": "errors",
    "CompatError": "errors",
    "ConflictingAliasError": "errors",
    "ConstraintError": "errors",
    "DroppedFieldWarning": "errors",
    "FieldTypeError": "errors",
    "InvalidValueError": "errors",
    "MegatronNotInstalledError": "errors",
    "NewerVersionWarning": "errors",
    "UnknownFieldError": "errors",
    "UnsupportedFieldError": "errors",
    "UnsupportedVersionError": "errors",
    "VersionError": "errors",
    "Resolution": "resolve",
    "ddp_kwargs": "resolve",
    "resolve": "resolve",
    "resolve_ddp_overrides": "resolver",
    "Difference": "audit",
    "audit": "audit",
    "build_config": "build",
    "build_optimizer_config": "build",
    "build_transformer_config": "build",
    "AuditError": "errors",
    "ConfigAbsentError": "errors",
    "TorchNotInstalledError": "errors",
    "config_kwargs": "resolve",
    "optimizer_kwargs": "resolve",
    "transformer_kwargs": "resolve",
    "ConfigResolutions": "together",
    "resolve_configs": "together",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups do not come back here
    return value


def __dir__():
    return sorted({*globals(), *_EXPORTS})


class _Package(types.ModuleType):
    def __setattr__(self, name, value):
        # Importing a submodule binds it on the package (compat.resolve = <module compat.resolve>). Where a
        # public name is also a submodule's name (resolve), the public name wins, as with eager imports.
        if name in _EXPORTS and isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.{name}":
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
