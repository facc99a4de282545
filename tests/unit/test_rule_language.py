"""One rule language: rules.json's curated constraints are checks in the evaluator's language, evaluated by the one
evaluator; one meaning of a rule's since/until for every rule kind; no internal DDP-first defaults."""
import ast
import dataclasses
from pathlib import Path

import pytest
from source_trees import parsed

import compat
from compat import ConstraintError, ddp_kwargs, resolve
from compat import version as v
from compat.cross import Side
from compat.cross import _applies as cross_applies
from compat.effective import post_init_values
from compat.evaluate import UNKNOWN, evaluate, unsupported
from compat.precheck import CURATED, CURATED_FUNCTIONS, applies, fires, holds
from compat.registry import Check, curated_checks, load_json, registry

REG = registry()
EXTRACTED_KEYS = set(REG.data["checks"][0])  # the shape of an extracted check in registry.json
CURATED_RECORDS = load_json("rules.json")["constraints"]
PACKAGE = Path(compat.__file__).parent


def parse(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _releases_where(check: Check) -> list[str]:
    return [r for r in REG.versions_having("ddp") if applies(check, REG.schema(r, config="ddp"))]


# ------------------------------------------------------------------------------------ the evaluator's shape
@pytest.mark.parametrize("record", CURATED_RECORDS, ids=lambda r: r["id"])
def test_every_curated_constraint_has_the_extracted_shape_and_evidence(record):
    assert EXTRACTED_KEYS <= set(record), EXTRACTED_KEYS - set(record)
    assert set(record) - EXTRACTED_KEYS <= {"id", "evidence", "since", "until", "sets"}
    assert record["owner"] == CURATED and record["skip"] is None
    assert record["kind"] in ("raise", "assert", "coerce")
    assert (record["test"] is not None) == (record["kind"] == "assert")
    assert record["evidence"] and all(isinstance(e, str) and e for e in record["evidence"])
    assert isinstance(ast.literal_eval(record["message"]), str)  # message as source text, as extracted ones


@pytest.mark.parametrize("record", CURATED_RECORDS, ids=lambda r: r["id"])
def test_every_curated_expression_is_inside_the_evaluators_language(record):
    for text in [*record["when"], *([record["test"]] if record["test"] else [])]:
        node = parse(text)
        assert unsupported(node, CURATED_FUNCTIONS) is None, text
        named = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.value.id == "self"}
        assert named <= set(record["reads"]) | set(dict(record.get("sets", {}))), text


@pytest.mark.parametrize("check", curated_checks("ddp"), ids=lambda c: c.id)
def test_every_curated_check_evaluates_on_the_defaults_of_each_release_it_applies_to(check, monkeypatch):
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    releases = _releases_where(check)
    assert releases, f"{check.id} applies to no registry release"
    for release in releases:
        env = post_init_values(REG.schema(release, config="ddp"), {})
        outcome = holds(check, env) if check.kind == "coerce" else fires(check, env)
        assert outcome is False, (check.id, release)  # known, and the defaults pass


def test_curated_functions_read_the_environment(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64,expandable_segments:True")
    text = "'expandable_segments:True' in env_items('PYTORCH_CUDA_ALLOC_CONF')"
    assert evaluate(text, {}, functions=CURATED_FUNCTIONS) is True
    assert evaluate(text, {}) is UNKNOWN  # extracted checks cannot call them
    assert unsupported(parse(text)) == "a call of env_items"
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    assert evaluate(text, {}, functions=CURATED_FUNCTIONS) is False


# ------------------------------------------------------------------------------------ dropped duplicates
# The two rules.json constraints that repeated an extracted check, as they were (predicates on the effective
# values), and configs to try on every release they applied to.
DROPPED = {
    "mxfp8-reuse-needs-fp8-param-gather": (
        "0.13.0", lambda e: bool(e["reuse_grad_buf_for_mxfp8_param_ag"]) and not e["fp8_param_gather"],
        [{"reuse_grad_buf_for_mxfp8_param_ag": True}, {"reuse_grad_buf_for_mxfp8_param_ag": True,
                                                       "fp8_param_gather": True},
         {"reuse_grad_buf_for_mxfp8_param_ag": False}, {"fp8_param_gather": True}]),
    "num-buckets-excludes-bucket-size": (
        "0.18.0", lambda e: e["num_buckets"] is not None and e["bucket_size"] is not None,
        [{"num_buckets": 2, "bucket_size": 1000}, {"num_buckets": 2}, {"bucket_size": 1000},
         {"num_buckets": None, "bucket_size": 1000}]),
}


def test_the_dropped_duplicates_are_gone_from_rules_json():
    assert not set(DROPPED) & {c.id for c in curated_checks("ddp")}


@pytest.mark.parametrize("rule_id", sorted(DROPPED))
def test_the_extracted_check_refuses_what_the_dropped_rule_refused(rule_id):
    since, refused, configs = DROPPED[rule_id]
    releases = [r for r in REG.versions_having("ddp") if v.at_least(r, since)]
    assert releases
    for release in releases:
        schema = REG.schema(release, config="ddp")
        for overrides in configs:
            effective = {f.name: f.default for f in schema.fields} | overrides
            if not refused(effective):
                ddp_kwargs(overrides, None, release, dtype_format="str")
                continue
            with pytest.raises(ConstraintError) as err:
                ddp_kwargs(overrides, None, release, dtype_format="str")
            check = err.value.check  # raised by a pre-check of an extracted __post_init__ check
            assert check.owner == "DistributedDataParallelConfig" and check.skip is None and check.line > 0


# ------------------------------------------------------------------------------------ one meaning of "since"
SINCE_TABLE = [  # (build, inside "since 0.18.0", inside "until 0.17.1")
    ("0.18.0", True, False),
    ("0.18.0rc1", True, False),
    ("0.18.0.dev0", True, False),
    ("0.18.0.post1", True, False),
    ("0.18.0+abc", True, False),
    ("0.17.1", False, True),
    ("0.17.1rc2", False, True),
    ("0.17.1.post1", False, True),
    ("0.17.2rc1", False, False),
    ("0.19.0", True, False),
]


def _curated_says(build: str, since=None, until=None) -> bool:
    check = Check("raise", "ValueError", ("self.nccl_ub",), None, None, ("nccl_ub",), None, 0, CURATED,
                  "probe", ("test",), since, until)
    schema = dataclasses.replace(REG.schema("0.17.1", config="ddp"), version=build, source="live")
    return applies(check, schema)


def _cross_says(build: str, since=None, until=None) -> bool:
    rule = {"id": "probe", "kind": "check", "when": [], "then": {"config": "ddp", "field": "nccl_ub", "equals": True}}
    rule |= {k: val for k, val in (("since", since), ("until", until)) if val}
    sides = {"ddp": Side("ddp", {}, set(), lambda n: True)}
    return cross_applies(rule, sides, build)


@pytest.mark.parametrize("build, since_in, until_in", SINCE_TABLE)
def test_since_and_until_mean_the_same_in_every_rule_kind(build, since_in, until_in):
    for says in (v.within, _curated_says, _cross_says):
        assert says(build, since="0.18.0") is since_in, (says.__name__, build)
        assert says(build, until="0.17.1") is until_in, (says.__name__, build)


def test_a_curated_rule_since_a_release_applies_to_its_release_candidate():
    """The coercion 'since 0.19.0' applies to a live 0.19.0rc1 build (it used to need the final 0.19.0)."""
    live = dataclasses.replace(REG.schema("0.19.0", config="ddp"), version="0.19.0rc1", source="live")
    res = resolve({"megatron_fsdp_max_pool_double_buffer": True}, schema=live)
    assert res.fields["fsdp_double_buffer"].source == "coerced" and res.kwargs["fsdp_double_buffer"] is True


# ------------------------------------------------------------------------------------ no DDP-first defaults
def _ddp_defaults(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults),
                     *zip(a.kwonlyargs, a.kw_defaults)]
            for arg, default in pairs:
                if isinstance(default, ast.Constant) and default.value == "ddp":
                    yield node.name, arg.arg, node.lineno
        elif isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Constant) and node.value.value == "ddp":
            yield "(field)", ast.unparse(node.target), node.lineno


def test_no_internal_function_defaults_config_to_ddp():
    """Only the public API (compat.__all__: resolve, ...) keeps DDP as its documented default."""
    found = [f"{path.relative_to(PACKAGE)}:{line} {name}({arg}='ddp')"
             for path in sorted(PACKAGE.rglob("*.py"))
             for name, arg, line in _ddp_defaults(parsed(path))
             if name not in compat.__all__]
    assert found == []


def test_the_ast_scan_finds_a_ddp_default():
    source = "def f(x, config='ddp'): ...\ndef g(*, config='ddp'): ...\nclass C:\n    config: str = 'ddp'\n"
    assert [(n, a) for n, a, _ in _ddp_defaults(ast.parse(source))] == [("f", "config"), ("g", "config"),
                                                                          ("(field)", "config")]


def test_no_runtime_branch_on_the_ddp_key():
    """Per-class policy is data (ConfigClass.takes_optimizer, rules.json's 'configs'), not `config == "ddp"`.

    (Every release has a DistributedDataParallelConfig: the extractor and the registry check insist on one.)"""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops) and any(
                    isinstance(c, ast.Constant) and c.value == "ddp" for c in [node.left, *node.comparators]):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
