# SPDX-License-Identifier: Apache-2.0
"""Typed errors and warnings. Every error is a ``CompatError`` (a ``ValueError``)."""
from __future__ import annotations

import re
import reprlib

MAX_LINE_CHARS = 2000  # what one error line shows of a message
MAX_VALUE_CHARS = 400  # what a message shows of one value
# C0/C1 controls, line/paragraph separators, and the invisible characters that reorder or hide text in a terminal
# or a rendered page (bidi embeddings/overrides/isolates, zero-width spaces and marks, BOM: "Trojan source")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def escape_controls(text: str) -> str:
    """Control characters (newlines, ESC, bidi overrides, ...) shown as escapes: one line, and inert."""
    return CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def one_line(text, limit: int = MAX_LINE_CHARS) -> str:
    """Any text as one line of at most about ``limit`` characters, in time linear in its length: runs of
    whitespace become one blank, other control characters are escaped, and the middle is cut past ``limit`` (the
    cause of an error usually comes last)."""
    text, dropped = str(text), 0
    keep = 4 * limit  # cut first, so that nothing below works on more than a few times what is shown
    if len(text) > 2 * keep:
        text, dropped = text[:keep] + text[-keep:], len(text) - 2 * keep
    line = escape_controls(" ".join(text.split()))
    if dropped or len(line) > limit:
        half = min(limit // 2, len(line) // 2)
        line = f"{line[:half]}...({len(line) - 2 * half + dropped} characters left out)...{line[len(line) - half:]}"
    return line


def _bounded_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxstring, r.maxother = 4, 300, 300
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdict = r.maxdeque = r.maxarray = 16
    return r


_REPR = _bounded_repr()


def value_repr(value) -> str:
    """repr() of a user's value for a message, bounded in time and length (``reprlib``: long strings, containers and
    nesting cut), and a description where repr() fails (an int past the int-to-str digit limit, an object whose
    __repr__ raises)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001  a user object's own __repr__, or a huge int somewhere inside
        if isinstance(value, int):
            return f"<an int of {value.bit_length()} bits>"
        return f"<a {type(value).__name__} that cannot be shown>"
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "...(cut)"


def shown(text, limit: int = 200) -> str:
    """A name or value quoted for a message: repr() of it (which escapes control characters), cut to ``limit``
    characters first."""
    text = str(text)
    return repr(text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters)")


def cli_command(args: str) -> str:
    """The command line that runs ``args``, named the way this package was imported: ``python -m compat ARGS``, or
    ``python -m myproj._vendor.mcore_compat ARGS`` for a copy with its tooling; a vendored copy (runtime only) names
    the installed tool, ``mcore-compat ARGS``."""
    import os

    package = __name__.rpartition(".")[0]
    if os.path.isdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tooling")):
        return f"python -m {package} {args}"
    return f"mcore-compat {args}"


class CompatError(ValueError):
    """Base class of every error mcore-compat raises on bad input."""


class UnknownFieldError(CompatError):
    def __init__(self, field: str, suggestion: str | None = None, where: str = "DistributedDataParallelConfig",
                 config: str = "ddp"):
        self.field, self.suggestion = field, suggestion
        flag = "" if config == "ddp" else f" --config {config}"
        hint = (f"; did you mean {suggestion!r}?" if suggestion
                else f"; `{cli_command(f'fields{flag} --mcore VERSION')}` lists the valid names")
        super().__init__(f"unknown {where} field {field!r}{hint}")


class FieldTypeError(CompatError, TypeError):
    def __init__(self, field: str, value, expected: str, accepted_by: str = ""):
        self.field, self.value, self.expected, self.accepted_by = field, value, expected, accepted_by
        super().__init__(f"field {field!r}: expected {expected}, got {type(value).__name__} {value_repr(value)}"
                         + (f" ({accepted_by})" if accepted_by else ""))


class InvalidValueError(CompatError):
    def __init__(self, field: str, value, reason: str):
        self.field, self.value, self.reason = field, value, reason
        super().__init__(f"field {field!r}: invalid value {value_repr(value)}: {reason}")


class ConflictingAliasError(CompatError):
    def __init__(self, field: str, given: dict):
        self.field, self.given = field, dict(given)
        parts = ", ".join(f"{k}={value_repr(v)}" for k, v in given.items())
        super().__init__(f"conflicting values for {field!r} given under several names: {parts}")


class UnsupportedFieldError(CompatError):
    def __init__(self, field: str, value, version: str, supported_in: str, hint: str = ""):
        self.field, self.value, self.version, self.supported_in = field, value, version, supported_in
        msg = (f"field {field!r}={value_repr(value)} is not supported by megatron-core {version}; "
               f"it exists in {supported_in}")
        super().__init__(msg + (f". {hint}" if hint else ""))


class ConstraintError(CompatError):
    def __init__(self, rule: str, message: str, values: dict, version: str):
        self.rule, self.values, self.version = rule, dict(values), version
        parts = ", ".join(f"{k}={value_repr(v)}" for k, v in values.items())
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
