"""mcore-compat: one place that knows every megatron-core config dataclass (DDP, optimizer, transformer).

Importing this package never imports torch or megatron.
"""
from .audit import Difference, audit
from .build import (build_config, build_ddp_config, build_optimizer_config, build_transformer_config,
                    live_schema)
from .errors import (AuditError, CompatError, ConfigAbsentError, ConflictingAliasError, ConstraintError,
                     FieldTypeError, InvalidValueError, MegatronNotInstalledError, TorchNotInstalledError,
                     UnknownFieldError, UnsupportedFieldError, UnsupportedVersionError, VersionError)
from .resolve import Resolution, config_kwargs, ddp_kwargs, optimizer_kwargs, resolve, transformer_kwargs
from .resolver import resolve_ddp_overrides
from .together import ConfigResolutions, resolve_configs

__version__ = "0.1.0"

__all__ = [
    "AuditError", "CompatError", "ConfigAbsentError", "ConfigResolutions", "ConflictingAliasError",
    "ConstraintError", "Difference", "FieldTypeError", "InvalidValueError", "MegatronNotInstalledError",
    "Resolution", "TorchNotInstalledError", "UnknownFieldError", "UnsupportedFieldError", "UnsupportedVersionError",
    "VersionError", "audit", "build_config", "build_ddp_config", "build_optimizer_config",
    "build_transformer_config", "config_kwargs", "ddp_kwargs", "live_schema", "optimizer_kwargs", "resolve",
    "resolve_configs", "resolve_ddp_overrides", "transformer_kwargs",
]
