"""mcore-compat: one place that knows every megatron-core DistributedDataParallelConfig.

Importing this package never imports torch or megatron.
"""
from .build import build_ddp_config, live_schema
from .errors import (CompatError, ConflictingAliasError, ConstraintError, FieldTypeError, InvalidValueError,
                     MegatronNotInstalledError, UnknownFieldError, UnsupportedFieldError, UnsupportedVersionError,
                     VersionError)
from .resolve import Resolution, ddp_kwargs, resolve
from .resolver import resolve_ddp_overrides

__version__ = "0.1.0"

__all__ = [
    "CompatError", "ConflictingAliasError", "ConstraintError", "FieldTypeError", "InvalidValueError",
    "MegatronNotInstalledError", "Resolution", "UnknownFieldError", "UnsupportedFieldError",
    "UnsupportedVersionError", "VersionError", "build_ddp_config", "ddp_kwargs", "live_schema", "resolve",
    "resolve_ddp_overrides",
]
