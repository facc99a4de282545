"""The surface gate's size limits (compat/tooling/gate/surface/): no function over 60 lines, no class with more
than 15 instance attributes, no detector module of 400 lines or more. Cyclomatic complexity (at most 15) is ruff's
C901, configured in pyproject.toml and run by test_lint.py."""
import ast
from pathlib import Path

SURFACE = Path(__file__).resolve().parents[2] / "compat" / "tooling" / "gate" / "surface"
MAX_FUNCTION_LINES = 60
MAX_ATTRIBUTES = 15
MAX_DETECTOR_LINES = 400
RECORDS: dict = {}  # classes exempt by name (file -> names): none; the records Use and Finding fit too


def _modules():
    return sorted(p for p in SURFACE.rglob("*.py") if "__pycache__" not in p.parts)


def _trees():
    return [(path.relative_to(SURFACE).as_posix(), ast.parse(path.read_text(encoding="utf-8"))) for path in _modules()]


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _attributes(node: ast.ClassDef) -> set[str]:
    """What the class's methods set on ``self`` (its first parameter), and its dataclass fields."""
    names = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
             and "ClassVar" not in ast.unparse(s.annotation)}
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
            continue
        self_name = method.args.args[0].arg
        for sub in ast.walk(method):
            if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and \
                    isinstance(sub.value, ast.Name) and sub.value.id == self_name:
                names.add(sub.attr)
    return names


def test_the_limits_see_the_modules():
    names = {rel for rel, _tree in _trees()}
    assert {"scanner.py", "project.py", "detectors/__init__.py", "detectors/megatron_calls.py"} <= names


def test_no_function_is_over_60_lines():
    limit = MAX_FUNCTION_LINES
    long = [f"{rel}:{f.lineno} {f.name}: {f.end_lineno - min([f.lineno] + [d.lineno for d in f.decorator_list]) + 1}"
            for rel, tree in _trees() for f in _functions(tree)
            if f.end_lineno - min([f.lineno] + [d.lineno for d in f.decorator_list]) + 1 > limit]
    assert long == []


def test_no_class_has_more_than_15_instance_attributes():
    wide = [f"{rel}:{node.lineno} {node.name}: {len(_attributes(node))}" for rel, tree in _trees()
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and node.name not in RECORDS.get(rel, ()) and len(_attributes(node)) > MAX_ATTRIBUTES]
    assert wide == []


def test_every_detector_module_is_under_400_lines():
    detectors = [p for p in _modules() if p.parent.name == "detectors"]
    assert len(detectors) > 10
    long = [f"{p.name}: {n}" for p in detectors for n in [len(p.read_text(encoding="utf-8").splitlines())]
            if n >= MAX_DETECTOR_LINES]
    assert long == []


def test_the_attribute_count_sees_methods_and_fields():
    tree = ast.parse("class A:\n    x: int = 0\n    def f(me):\n        me.y = 1\n        me.z.w = 2\n")
    assert _attributes(tree.body[0]) == {"x", "y"}
