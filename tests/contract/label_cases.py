"""Megatron-LM's own unit-test constructor calls (``data/megatron_test_labels.json``) replayed on the session's
real classes and through compat. Shared by the contract test and ``benchmarks/megatron_labels_report.py``."""
import enum
import importlib
import json
import warnings
from pathlib import Path

from live_helpers import live_class

import compat
from compat.canonical import canonical
from compat.configs import CONFIGS
from compat.errors import CompatError, ConstraintError, MegatronNotInstalledError
from compat.registry import registry

DATA = Path(__file__).parent / "data"
LABELS = json.loads((DATA / "megatron_test_labels.json").read_text())
REFUSALS = json.loads((DATA / "documented_refusals.json").read_text())["refusals"]
ENUM_MODULES = ("megatron.core.transformer.enums", "megatron.core.enums", "megatron.core.optimizer.optimizer_config",
                "megatron.core.transformer.transformer_config")
MODEL_PARALLEL = "model_parallel"  # no compat config of its own: its fields are checked as TransformerConfig's


def decode(value):
    """The live value of an encoded label value (torch dtypes and Enum members from the installed build)."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "__tuple__" in value:
            return tuple(decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {decode(k): decode(v) for k, v in value["__dict__"]}
        if "__dtype__" in value:
            import torch

            return getattr(torch, value["__dtype__"])
        if "__enum__" in value:
            cls, member = value["__enum__"].split(".")
            for name in ENUM_MODULES:
                try:
                    kind = getattr(importlib.import_module(name), cls, None)
                except ImportError:
                    continue
                if isinstance(kind, type) and issubclass(kind, enum.Enum) and member in kind.__members__:
                    return kind[member]
            raise LookupError(value["__enum__"])
    return value


def decode_kwargs(kwargs: dict) -> dict:
    return {k: decode(v) for k, v in kwargs.items()}


def real_class(config: str):
    if config == MODEL_PARALLEL:
        return importlib.import_module("megatron.core.model_parallel_config").ModelParallelConfig
    return live_class(config)  # 0.7.0's megatron.core.optimizer imports apex: then the class from its file alone


def real_outcome(cls, kwargs: dict) -> str | None:
    """None when the real class builds, else the exception's type and first line."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls(**kwargs)
    except Exception as exc:  # the real class's own verdict, whatever it raises
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    return None


def compat_outcomes(config: str, kwargs: dict, version: str) -> dict[str, CompatError | None]:
    """compat's verdict from the registry alone and on the live class (None: accepted)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if config == MODEL_PARALLEL:
            reg = registry()
            try:
                canonical(reg, None, config="transformer").canonicalize(kwargs, reg.schema(version, config="transformer"))
                out["registry"] = None
            except CompatError as exc:
                out["registry"] = exc
            return out
        try:
            compat.config_kwargs(config, kwargs, version)
            out["registry"] = None
        except CompatError as exc:
            out["registry"] = exc
        try:
            compat.build_config(config, kwargs)
            out["live"] = None
        except MegatronNotInstalledError:
            pass  # the package does not import on this host (0.7.0 optimizer: apex): no live verdict to compare
        except CompatError as exc:
            out["live"] = exc
        except Exception as exc:  # the real class raised after compat accepted: compat passed it on
            out["live"] = None if not isinstance(exc, CompatError) else exc
    return out


def documented(error: CompatError) -> dict | None:
    """The documented refusal an error is, if any (by its type and the rule or field it names)."""
    for row in REFUSALS:
        if type(error).__name__ != row["error"]:
            continue
        if isinstance(error, ConstraintError) and error.rule == row.get("rule"):
            return row
        if getattr(error, "field", None) == row.get("field") and "rule" not in row and \
                type(getattr(error, "value", None)).__name__ in row.get("value_types", ()):
            return row
    return None


def cases_for(version: str):
    """(case, config) for every label whose class the installed build has."""
    reg = registry()
    for case in LABELS["cases"]:
        config = case["config"]
        have = config == MODEL_PARALLEL or (config in CONFIGS and reg.has(version, config=config))
        if have:
            yield case


__all__ = ["LABELS", "REFUSALS", "cases_for", "compat_outcomes", "decode", "decode_kwargs", "documented", "real_class",
           "real_outcome"]
