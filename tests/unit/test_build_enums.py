"""build_config turns a str naming a member of a field's Enum into the member (Megatron compares
``config.attention_backend == AttnBackend.flash``: the str "flash", as verl's override dicts carry it, matches no
member and is silently ignored). Registry-only: a stand-in dataclass named like Megatron's class; the real
classes are covered by tests/contract/test_real_configs.py."""
import dataclasses
import enum
from typing import Optional

import pytest

import compat
from compat.build import build_config, live_values


class AttnBackend(enum.Enum):
    flash = 1
    fused = 2
    auto = 5


@dataclasses.dataclass
class TransformerConfig:  # the name makes build_config treat it as the transformer config
    num_layers: int = 0
    hidden_size: int = 0
    num_attention_heads: int = 0
    attention_backend: AttnBackend = AttnBackend.auto
    normalization: str = "LayerNorm"


@dataclasses.dataclass
class OptionalEnum:
    attention_backend: AttnBackend | None = None
    normalization: str = "LayerNorm"


@dataclasses.dataclass
class OptionalEnumTyping:  # the typing spelling: Megatron's classes use it, and it is another runtime type
    attention_backend: Optional[AttnBackend] = None  # noqa: UP045
    normalization: str = "LayerNorm"


BASE = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4}


def test_a_member_name_becomes_the_member():
    obj = build_config(None, {**BASE, "attention_backend": "fused"}, cls=TransformerConfig)
    assert obj.attention_backend is AttnBackend.fused


def test_a_member_is_passed_as_it_is():
    obj = build_config(None, {**BASE, "attention_backend": AttnBackend.flash}, cls=TransformerConfig)
    assert obj.attention_backend is AttnBackend.flash


def test_a_name_that_is_no_member_is_refused_with_the_members():
    with pytest.raises(compat.InvalidValueError) as exc:
        build_config(None, {**BASE, "attention_backend": "flash_attn"}, cls=TransformerConfig)
    assert exc.value.field == "attention_backend" and "flash, fused, auto" in str(exc.value)


@pytest.mark.parametrize("cls", [OptionalEnum, OptionalEnumTyping], ids=["pep604", "typing-optional"])
def test_optional_enum_and_plain_str_fields(cls):
    out = live_values(cls, {"attention_backend": "auto", "normalization": "RMSNorm"})
    assert out == {"attention_backend": AttnBackend.auto, "normalization": "RMSNorm"}
    assert live_values(cls, {"attention_backend": None}) == {"attention_backend": None}


def test_audit_compares_with_the_member():
    res = compat.resolve({**BASE, "attention_backend": "flash"}, config="transformer", version="0.19.2")
    obj = build_config(None, {**BASE, "attention_backend": "flash"}, cls=TransformerConfig)
    assert compat.audit(obj, res) == []
    obj.attention_backend = AttnBackend.fused
    assert [d.field for d in compat.audit(obj, res)] == ["attention_backend"]


# ---- the registry knows the members: a value naming none is refused without megatron
def test_registry_records_enum_members_from_the_wheels():
    from compat.registry import registry

    reg = registry()
    field = reg.schema("0.16.1", config="transformer").get("attention_backend")
    assert dict(field.enums)["AttnBackend"] == ("flash", "fused", "unfused", "local", "auto")
    assert reg.schema("0.10.0", config="transformer").get("attention_backend") is None  # the field came in 0.11.0


@pytest.mark.parametrize("value", ["no_such_backend", 3, AttnBackend.flash])
def test_registry_refuses_a_non_member(value):
    # AttnBackend.flash here is a member of this test's own Enum named AttnBackend, so it is accepted by name;
    # a str or int naming no member is refused, as the live build refuses it
    kwargs = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "attention_backend": value}
    if isinstance(value, AttnBackend):
        assert compat.transformer_kwargs(kwargs, "0.16.1")["attention_backend"] is value
        return
    with pytest.raises(compat.CompatError) as err:
        compat.transformer_kwargs(kwargs, "0.16.1")
    assert err.value.field == "attention_backend" and err.value.value == value
    assert "flash, fused, unfused, local, auto" in str(err.value)


def test_enum_members_are_read_from_the_config_file_and_its_imports():
    from compat.tooling.extract import extract_configs

    files = {
        "megatron/core/transformer/transformer_config.py":
            b"from dataclasses import dataclass\n"
            b"from megatron.core.transformer.enums import AttnBackend\n"
            b"import enum\n"
            b"class Local(enum.Enum):\n    a = 1\n    _hidden = 2\n"
            b"@dataclass\nclass TransformerConfig:\n"
            b"    attention_backend: AttnBackend = AttnBackend.auto\n"
            b"    local: Optional[Local] = None\n"
            b"    plain: str = 'x'\n",
        "megatron/core/transformer/enums.py":
            b"import enum\nclass AttnBackend(enum.Enum):\n    flash = 1\n    auto = enum.auto()\n",
    }
    facts = extract_configs(files.get)["transformer"]
    by_name = {f["name"]: f for f in facts["fields"]}
    assert by_name["attention_backend"]["enums"] == {"AttnBackend": ["flash", "auto"]}
    assert by_name["local"]["enums"] == {"Local": ["a"]}
    assert "enums" not in by_name["plain"]


def test_live_build_refuses_a_value_of_another_type():
    # the live schema carries the live Enum's members too, so an int is refused before the class sees it
    with pytest.raises(compat.CompatError, match="expected a AttnBackend member or its name"):
        build_config(None, {**BASE, "attention_backend": 3}, cls=TransformerConfig)
