"""mcore-compat: one place that knows every megatron-core config dataclass (DDP, optimizer, transformer).

Importing this package never imports torch or megatron, and imports no submodule either: the public names
below are loaded from their modules on first use (PEP 562), so ``import compat`` costs well under a
millisecond and each caller pays only for what it uses.
"""
import importlib

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
    "Resolution": "resolution",
    "ddp_kwargs": "resolution",
    "resolve": "resolution",
    "resolve_ddp_overrides": "fp32_rule",
    "Difference": "config_audit",
    "audit": "config_audit",
    "build_config": "build",
    "build_optimizer_config": "build",
    "build_transformer_config": "build",
    "AuditError": "errors",
    "ConfigAbsentError": "errors",
    "TorchNotInstalledError": "errors",
    "config_kwargs": "resolution",
    "optimizer_kwargs": "resolution",
    "transformer_kwargs": "resolution",
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
