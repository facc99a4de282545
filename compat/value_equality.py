# SPDX-License-Identifier: Apache-2.0
"""The one meaning of "the same value" for a config field: what Megatron would read the same way.

Dtypes compare by name (a torch dtype and its name), a list and a tuple by their items, an int and a float by
value; a bool equals only a bool (``True == 1`` in Python, but a flag set to 1 is not the flag set); anything
else by ``==``, and a value whose ``==`` fails or has no truth value (an array) only by identity.
"""
from __future__ import annotations

from .dtypes import dtype_name, is_torch_dtype


def _normal(value):
    return dtype_name(value) if is_torch_dtype(value) else value


def same_value(a, b) -> bool:
    try:
        return _same(a, b)
    except RecursionError:  # nested deeper than the stack: only identity counts
        return a is b


_PLAIN = (bool, int, float, str, type(None))


def _same(a, b) -> bool:
    if a is b:
        return True
    if type(a) is type(b) and type(a) in _PLAIN:
        return a == b
    a, b = _normal(a), _normal(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    try:
        return bool(a == b)
    except Exception:  # an odd __eq__ (arrays, a user's object): only identity counts
        return False


__all__ = ["same_value"]
