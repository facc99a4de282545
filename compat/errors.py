"""Typed errors and warnings. Every error is a ``CompatError`` (a ``ValueError``)."""
from __future__ import annotations


class CompatError(ValueError):
    """Base class of every error mcore-compat raises on bad input."""


class UnknownFieldError(CompatError):
    def __init__(self, field: str, suggestion: str | None = None, where: str = "DistributedDataParallelConfig",
                 config: str = "ddp"):
        self.field, self.suggestion = field, suggestion
        flag = "" if config == "ddp" else f" --config {config}"
        hint = (f"; did you mean {suggestion!r}?" if suggestion
                else f"; `python -m compat fields{flag} --mcore VERSION` lists the valid names")
        super().__init__(f"unknown {where} field {field!r}{hint}")


class FieldTypeError(CompatError, TypeError):
    def __init__(self, field: str, value, expected: str, accepted_by: str = ""):
        self.field, self.value, self.expected, self.accepted_by = field, value, expected, accepted_by
        super().__init__(f"field {field!r}: expected {expected}, got {type(value).__name__} {value!r}"
                         + (f" ({accepted_by})" if accepted_by else ""))


class InvalidValueError(CompatError):
    def __init__(self, field: str, value, reason: str):
        self.field, self.value, self.reason = field, value, reason
        super().__init__(f"field {field!r}: invalid value {value!r}: {reason}")


class ConflictingAliasError(CompatError):
    def __init__(self, field: str, given: dict):
        self.field, self.given = field, dict(given)
        parts = ", ".join(f"{k}={v!r}" for k, v in given.items())
        super().__init__(f"conflicting values for {field!r} given under several names: {parts}")


class UnsupportedFieldError(CompatError):
    def __init__(self, field: str, value, version: str, supported_in: str, hint: str = ""):
        self.field, self.value, self.version, self.supported_in = field, value, version, supported_in
        msg = (f"field {field!r}={value!r} is not supported by megatron-core {version}; "
               f"it exists in {supported_in}")
        super().__init__(msg + (f". {hint}" if hint else ""))


class ConstraintError(CompatError):
    def __init__(self, rule: str, message: str, values: dict, version: str):
        self.rule, self.values, self.version = rule, dict(values), version
        parts = ", ".join(f"{k}={v!r}" for k, v in values.items())
        super().__init__(f"megatron-core {version} rejects {parts}: {message} [rule {rule}]")


class VersionError(CompatError):
    """A version string that does not parse, or one no registry entry can serve."""


class UnsupportedVersionError(VersionError):
    pass


class MegatronNotInstalledError(CompatError):
    pass


class ConfigAbsentError(CompatError):
    """A release has no such config class (AdamOptimizerConfig exists only in 0.16-0.17)."""


class TorchNotInstalledError(CompatError):
    """A dtype must become a torch.dtype but torch is not importable."""


class AuditError(CompatError):
    """``compat.audit(..., strict=True)``: the object differs from what was resolved, or breaks a check."""

    def __init__(self, message: str, differences: list):
        self.differences = list(differences)
        super().__init__(message)


class CandidateError(CompatError):
    """The upgrade gate could not read a candidate (corrupt archive, missing file, network)."""


class CompatWarning(UserWarning):
    pass


class NewerVersionWarning(CompatWarning):
    pass


class DroppedFieldWarning(CompatWarning):
    pass
