"""live_schema reads a live class once: the same Schema object for the same class (so canonical() caches on it and
build_config does not re-read the class on every call), a class of its own for a new class object, and nothing
kept alive once the class is gone. Registry-only: stand-in dataclasses named like Megatron's class."""
import dataclasses
import gc
import weakref

import pytest

from compat import build
from compat.build import build_config, live_schema
from compat.canonical import canonical
from compat.errors import CompatError
from compat.registry import registry


def _transformer_class():
    @dataclasses.dataclass
    class TransformerConfig:  # the name makes build_config treat it as the transformer config
        num_layers: int = 0
        hidden_size: int = 0
        num_attention_heads: int = 0

        def __post_init__(self):
            if self.num_attention_heads and self.hidden_size % self.num_attention_heads:
                raise ValueError("hidden_size must be a multiple of num_attention_heads")

    return TransformerConfig


def _unchecked_transformer_class():
    @dataclasses.dataclass
    class TransformerConfig:
        num_layers: int = 0
        hidden_size: int = 0
        num_attention_heads: int = 0

    return TransformerConfig


def test_the_same_class_gives_the_same_schema_and_canonical():
    cls = _transformer_class()
    first = live_schema(cls, "transformer")
    assert live_schema(cls, "transformer") is first
    assert canonical(registry(), first, config="transformer") is canonical(registry(), first, config="transformer")
    build_config(None, {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4}, cls=cls)
    assert live_schema(cls, "transformer") is first  # build_config used (and kept) the same one


def test_a_new_class_object_is_read_again():
    checked, unchecked = _transformer_class(), _unchecked_transformer_class()
    assert live_schema(checked, "transformer") is not live_schema(unchecked, "transformer")
    assert live_schema(checked, "transformer").checks != live_schema(unchecked, "transformer").checks
    bad = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 5}
    with pytest.raises((CompatError, ValueError)):
        build_config(None, bad, cls=checked)
    assert build_config(None, bad, cls=unchecked).num_attention_heads == 5


def test_the_cache_does_not_keep_a_class_alive():
    cls = _transformer_class()
    gc.collect()
    live_schema(cls, "transformer")
    cached = len(build._LIVE_SCHEMAS)
    gone = weakref.ref(cls)
    del cls
    gc.collect()
    assert gone() is None
    assert len(build._LIVE_SCHEMAS) == cached - 1
