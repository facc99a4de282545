# SPDX-License-Identifier: Apache-2.0
"""mcore-compat: one place that knows every megatron-core config dataclass (DDP, optimizer, transformer).

Importing this package never imports torch or megatron, and imports no submodule either: the public names
below are loaded from their modules on first use (PEP 562), so ``import compat`` costs well under a
millisecond and each caller pays only for what it uses.
"""
import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy and pyright read the name)

__version__ = "0.1.0"

# Public name -> the submodule that defines it, grouped by module. Add new public names here and below.
_EXPORTS = {
    "build_config": "build",
    "build_ddp_config": "build",
    "build_optimizer_config": "build",
    "build_transformer_config": "build",
    "live_schema": "build",
    "config_kwargs": "kwargs",
    "ddp_kwargs": "kwargs",
    "optimizer_kwargs": "kwargs",
    "resolve": "resolution",
    "transformer_kwargs": "kwargs",
    "Resolution": "resolution",
    "resolve_ddp_overrides": "fp32_rule",
    "resolve_configs": "resolution",
    "ConfigResolutions": "resolution",
    "audit": "config_audit",
    "Difference": "config_audit",
    "AuditError": "errors",
    "CandidateError": "errors",
    "CompatError": "errors",
    "ConfigAbsentError": "errors",
    "ConflictingAliasError": "errors",
    "ConstraintError": "errors",
    "DroppedFieldWarning": "errors",
    "FieldTypeError": "errors",
    "InvalidValueError": "errors",
    "MegatronNotInstalledError": "errors",
    "NewerVersionWarning": "errors",
    "TorchNotInstalledError": "errors",
    "UnknownFieldError": "errors",
    "UnsupportedFieldError": "errors",
    "UnsupportedVersionError": "errors",
    "VersionError": "errors",
}

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs (tests/unit/test_layout.py keeps both in step)
    from .build import build_config, build_ddp_config, build_optimizer_config, build_transformer_config, live_schema
    from .config_audit import Difference, audit
    from .errors import (
        AuditError,
        CandidateError,
        CompatError,
        ConfigAbsentError,
        ConflictingAliasError,
        ConstraintError,
        DroppedFieldWarning,
        FieldTypeError,
        InvalidValueError,
        MegatronNotInstalledError,
        NewerVersionWarning,
        TorchNotInstalledError,
        UnknownFieldError,
        UnsupportedFieldError,
        UnsupportedVersionError,
        VersionError,
    )
    from .fp32_rule import resolve_ddp_overrides
    from .kwargs import config_kwargs, ddp_kwargs, optimizer_kwargs, transformer_kwargs
    from .resolution import ConfigResolutions, Resolution, resolve, resolve_configs

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups do not come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
