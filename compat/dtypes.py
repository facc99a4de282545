# SPDX-License-Identifier: Apache-2.0
"""Dtype values without importing torch: accept torch dtypes and the usual strings, keep a canonical name."""
from __future__ import annotations

_ALIASES = {
    "fp32": "float32", "float32": "float32", "float": "float32", "32": "float32",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp16": "float16", "float16": "float16", "half": "float16", "16": "float16",
}
FP32 = "float32"


def is_torch_dtype(value) -> bool:
    return type(value).__name__ == "dtype" and type(value).__module__ == "torch"


def dtype_name(value) -> str | None:
    """Canonical name ("bfloat16") for a torch dtype or an accepted string; None when not recognised."""
    if is_torch_dtype(value):
        return str(value).removeprefix("torch.")
    if isinstance(value, str):
        key = value.strip().lower().removeprefix("torch.")
        return _ALIASES.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return _ALIASES.get(str(value))
    return None


def accepted_spellings() -> str:
    return ", ".join(sorted(_ALIASES))


def to_torch(name: str | None):
    if name is None:
        return None
    try:
        import torch  # only when a dtype must be materialised
    except ImportError:
        from .errors import TorchNotInstalledError

        raise TorchNotInstalledError(
            f"the dtype {name!r} must become a torch.dtype but torch is not installed; pass dtype_format='str' "
            "for dtype names") from None
    return getattr(torch, name)
