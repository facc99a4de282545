"""Every detector of the project scan describes itself with one Rule (detectors.rules(): the catalogue's source)."""
import ast
from pathlib import Path

from compat.tooling.gate.surface import detectors
from compat.tooling.gate.surface.kinds import FindingKind
from compat.tooling.gate.surface.rule import Rule

DETECTORS = Path(detectors.__file__).parent


def test_rules_lists_one_rule_per_detector_module_named_by_it():
    modules = sorted(p.stem for p in DETECTORS.glob("*.py") if p.stem != "__init__")
    rules = detectors.rules()
    assert all(isinstance(rule, Rule) for rule in rules)
    assert sorted(rule.id for rule in rules) == modules
    assert [rule.id for rule in rules] == [module.__name__.rpartition(".")[2] for module in detectors.DETECTORS]


def test_each_rule_says_what_it_sees_records_and_misses_with_an_example_in_python():
    for rule in detectors.rules():
        assert rule.sees and rule.misses and rule.records, rule.id
        ast.parse(rule.example)  # a short example in Python source
        assert all(isinstance(kind, FindingKind) for kind in rule.findings), rule.id
    assert sum(bool(rule.findings) for rule in detectors.rules()) >= len(detectors.rules()) - 1  # one only guards
