"""Annotations read semantically (a respelling changes nothing, before or after --accept),
and the source shapes the gate used to misread. Also the restricted evaluator of __post_init__ conditions."""
import ast
import importlib.util
import textwrap
import zipfile

import pytest

from compat import registry_format
from compat.annotations import type_key, type_of
from compat.canonical import Canonical
from compat.errors import FieldTypeError, TorchNotInstalledError
from compat.evaluate import UNKNOWN, Dtype, evaluate, render, unsupported
from compat.kwargs import materialize
from compat.registry import Registry, registry
from compat.tooling import gate as g
from compat.tooling.extract import DDP_PATH, extract_class


# ------------------------------------------------------------------------------------ annotations
@pytest.mark.parametrize("a, b", [
    ("Optional[int]", "int | None"), ("Optional[int]", "'Optional[int]'"), ("typing.Union[None, int]", "int | None"),
    ("Optional[torch.dtype]", "torch.dtype | None"), ("Tuple[str, ...]", "tuple[str, ...]"),
    ("List[int]", "typing.List[int]"), ("Literal['a', 'b']", "Literal['b', 'a']"),
    ("Union[str, List[str]]", "list[str] | str"),
])
def test_respellings_have_one_key(a, b):
    assert type_key(a) == type_key(b)


def test_literal_choices_and_unknown_types():
    assert type_of("Optional[Literal['full', 'selective']]").choices == ("full", "selective")
    assert type_of("Optional[Literal['full', 'selective']]").optional
    assert type_of("AttnBackend").kinds() == {"any"} and type_of("Callable[[torch.Tensor], torch.Tensor]").kinds() == \
        {"callable"}
    assert type_of("not valid python [").kinds() == {"any"}  # never refuses because of what it cannot read


def _ddp_source(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def _wheel(tmp_path, source: str, version: str = "0.20.0"):
    path = tmp_path / f"megatron_core-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"megatron_core-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: megatron-core\nVersion: {version}\n")
        z.writestr(DDP_PATH, source)
    return path


def _respelled_newest() -> str:
    """The newest release's DDPConfig source with Optional[X] respelled as X | None (quoted for one field)."""
    text = zipfile.ZipFile(_newest_wheel()).read(DDP_PATH).decode()
    text = text.replace("Optional[torch.dtype]", "torch.dtype | None").replace("bucket_size: Optional[int]",
                                                                             "bucket_size: 'int | None'")
    return text


def _newest_wheel():
    from compat.tooling import refresh

    return refresh.download(registry().newest())


@pytest.mark.network
def test_a_respelled_annotation_gates_compatible_and_keeps_its_checks_after_accept(tmp_path):
    reg = registry()
    report = g.gate(str(_wheel(tmp_path, _respelled_newest(), "0.19.9")), reg)
    spelled = [c for c in report.changes if c.what == "annotation"]
    assert spelled and all(c.level == g.INFO for c in spelled)
    accepted = Registry(registry_format.add_release(reg.data, "0.19.9", False, report.facts))
    assert accepted.schema("0.19.9", config="ddp").get("bucket_size").annotation == "'int | None'"
    canon = Canonical(accepted, config="ddp")
    assert canon.check_value("megatron_fsdp_main_params_dtype", "bf16") == "bfloat16"  # dtype spelling kept
    with pytest.raises(FieldTypeError, match="expected int"):
        canon.check_value("bucket_size", "40000000")
    assert canon.check_value("bucket_size", None) is None
    if importlib.util.find_spec("torch") is None:  # still materialised as a torch dtype
        with pytest.raises(TorchNotInstalledError):
            materialize({"megatron_fsdp_main_grads_dtype": "bfloat16"}, canon)
    else:
        assert str(materialize({"megatron_fsdp_main_grads_dtype": "bfloat16"}, canon)[
            "megatron_fsdp_main_grads_dtype"]) == "torch.bfloat16"


# ------------------------------------------------------------------------------------ shapes (2.5)
def test_a_class_defined_twice_is_its_last_definition():
    facts = extract_class(_ddp_source("""
        from dataclasses import dataclass
        @dataclass
        class DistributedDataParallelConfig:
            stale: int = 1
        @dataclass
        class DistributedDataParallelConfig:
            fresh: int = 2
    """), "DistributedDataParallelConfig")
    assert [f["name"] for f in facts["fields"]] == ["fresh"]


def test_setattr_and_an_inherited_post_init_are_read():
    facts = extract_class(_ddp_source("""
        from dataclasses import dataclass
        class Checks:
            def __post_init__(self):
                setattr(self, "bucket_size", None)
                if self.num_buckets is not None and self.num_buckets < 1:
                    raise ValueError("num_buckets must be positive")
        @dataclass
        class DistributedDataParallelConfig(Checks):
            bucket_size: int = 10
            num_buckets: int = None
    """), "DistributedDataParallelConfig")
    post = facts["post_init"]
    assert post["writes"] == ["bucket_size"] and "num_buckets" in post["reads"]
    [check] = post["checks"]
    assert check["when"] == ["self.num_buckets is not None and self.num_buckets < 1"] and check["skip"] is None
    assert check["owner"] == "Checks"


def test_post_init_walk_guards_and_skips():
    facts = extract_class(_ddp_source("""
        from dataclasses import dataclass
        @dataclass
        class C:
            a: int = 0
            b: int = 0
            c: list = None
            def __post_init__(self):
                if self.a < 0:
                    return
                if self.b is None:
                    self.b = 4
                assert self.b > 0, f"b must be positive, got {self.b}"
                if self.a > 5:
                    raise ValueError("a too big")
                for x in self.c or []:
                    assert x, "empty"
                try:
                    import te
                except ImportError:
                    raise RuntimeError("no te")
                if helper(self):
                    pass
                if self.a == 3:
                    raise ValueError("three")
    """), "C")
    checks = {c["line"]: c for c in facts["post_init"]["checks"]}
    by_msg = {(c["message"] or ""): c for c in checks.values()}
    positive = by_msg["f'b must be positive, got {self.b}'"]
    effects = facts["post_init"]["effects"]
    [write_b, anything] = [w for w in effects if w["targets"] is None or "b" in w["targets"]]
    assert positive["skip"] is None and positive["at"] == effects.index(write_b) + 1  # after the write of b
    assert write_b == {"targets": ["b"], "when": ["not self.a < 0", "self.b is None"], "when_at": [0, 0],
                       "value": "4", "maybe": None, "line": write_b["line"], "owner": "C"}
    assert anything["targets"] is None and anything["when"] == ["not self.a < 0"]  # helper(self) may set any field
    big = by_msg["'a too big'"]
    assert big["skip"] is None and big["when"] == ["not self.a < 0", "self.a > 5"]  # the early return guards it
    assert by_msg["'empty'"]["skip"] == "in a loop"
    assert by_msg["'no te'"]["skip"] == "in an except handler"
    three = by_msg["'three'"]  # after helper(self): pre-checked, read as UNKNOWN there
    assert three["skip"] is None and three["at"] == effects.index(anything) + 1


def test_a_new_field_without_a_default_is_breaking(tmp_path):
    source = _ddp_source("""
        from dataclasses import dataclass
        @dataclass
        class DistributedDataParallelConfig:
            grad_reduce_in_fp32: bool = False
            must_choose: str
    """)
    report = g.gate(str(_wheel(tmp_path, source)), registry())
    [added] = [c for c in report.changes if c.what == "added" and c.field == "must_choose"]
    assert added.level == g.BREAKING and added.new == "str = <required>" and "no default" in added.shim


# ------------------------------------------------------------------------------------ the evaluator
@pytest.mark.parametrize("text, env, expected", [
    ("self.a % self.b != 0", {"a": 4, "b": 3}, True),
    ("self.a and self.missing", {"a": False}, False),  # short-circuits before the unknown
    ("self.a and self.missing", {"a": True}, UNKNOWN),
    ("self.a or self.missing", {"a": True}, True),
    ("not self.x", {"x": None}, True),
    ("self.d == torch.float32", {"d": Dtype("float32")}, True),
    ("self.d == 'float32'", {"d": Dtype("float32")}, False),  # a torch.dtype never equals a string
    ("self.d in (torch.bfloat16, torch.float16)", {"d": Dtype("bfloat16")}, True),
    ("self.d is torch.float", {"d": Dtype("float32")}, True),
    ("len(self.xs) > 0", {"xs": ("a",)}, True),
    ("isinstance(self.xs, list)", {"xs": ("a",)}, False),
    ("self.a / self.b", {"a": 1, "b": 0}, UNKNOWN),  # megatron's own ZeroDivisionError, not ours
    ("self.s * self.n", {"s": "x", "n": 10**9}, UNKNOWN),  # no huge strings
    ("self.a if self.c else self.b", {"a": 1, "b": 2, "c": UNKNOWN}, UNKNOWN),
    ("self.k in ['full', 'selective']", {"k": "full"}, True),
])
def test_evaluate(text, env, expected):
    assert evaluate(text, env) == expected if expected is not UNKNOWN else evaluate(text, env) is UNKNOWN


@pytest.mark.parametrize("text, why", [
    ("is_te_min_version('1.7')", "a call of is_te_min_version"), ("self.fp8_recipe == Fp8Recipe.mxfp8",
                                                                 "the attribute Fp8Recipe.mxfp8"),
    ("tp_cp_size > 1", "the name tp_cp_size"), ("self.x.name == 'a'", "the attribute self.x.name"),
    ("isinstance(self.x, CudaGraphScope)", "isinstance against a non-builtin type"), ("self.a ** 2", "the operator Pow"),
])
def test_unsupported_is_static_and_names_why(text, why):
    assert unsupported(ast.parse(text, mode="eval").body) == why


def test_render_fills_in_the_f_string():
    assert render("f'heads ({self.h}) vs tp {self.tp!r}'", {"h": 4, "tp": 3}) == "heads (4) vs tp 3"
    assert render("f'x={self.y}'", {}) == "x={self.y}"


@pytest.mark.network
def test_transformer_changes_are_in_the_report():
    report = g.gate("megatron-core==0.19.0", registry().truncated("0.18.2"))
    tf = [c for c in report.changes if c.config == "TransformerConfig"]
    [default] = [c for c in tf if c.what == "default" and c.field == "moe_deepep_num_sms"]
    assert default.level == g.BREAKING and (default.old, default.new) == ("20", "None")
    added = [c for c in tf if c.what == "added"]
    assert added and all(c.level == g.INFO for c in added if not c.proposal)
    assert [c for c in tf if c.what == "check" and "pre-checked" in c.new]


@pytest.mark.network
def test_muon_rename_is_proposed_by_the_gate():
    report = g.gate("megatron-core==0.18.0", registry().truncated("0.17.1"))
    [added] = [c for c in report.changes if c.config == "OptimizerConfig" and c.field == "muon_nesterov"]
    [removed] = [c for c in report.changes if c.config == "OptimizerConfig" and c.field == "muon_use_nesterov"]
    assert removed.what == "removed" and "muon_nesterov" in removed.shim  # renames.json maps it
