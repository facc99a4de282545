"""The surface gate's recall cases (tests/data/surface_recall_cases/*.json) and how they are scored
(tools/surface_recall.py): the files follow the shared format, and a finding counts only at the case's
place, with the case's name, unguarded."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from compat.tooling.gate.surface import check as c
from tools import surface_recall as study

CASE_FILES = sorted(study.CASES_DIR.glob("*.json"))
FIELDS = {"id", "repo", "fix", "candidate", "path", "line", "shape", "symbol", "meant_to_see", "source"}
WHEEL_RELEASES = {f"0.{minor}.0" for minor in range(7, 20)} | {
    "0.12.1", "0.12.2", "0.12.3", "0.13.1", "0.15.1", "0.15.2", "0.15.3", "0.16.1", "0.17.1", "0.18.1", "0.18.2",
    "0.19.1", "0.19.2"}  # the 26 releases of the wheel cache the cases are scored on


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_case_file_follows_the_shared_format(path):
    cases = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(cases, list) and cases
    assert len({case["id"] for case in cases}) == len(cases), "ids must be unique"
    for case in cases:
        assert FIELDS <= set(case), case["id"]  # the shared fields; a set may add its own
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", case["repo"]), case["id"]
        assert re.fullmatch(r"[0-9a-f]{7,40}", case["fix"]) and len(case["fix"]) >= 7, case["id"]
        assert case["candidate"] in WHEEL_RELEASES, case["id"]
        assert case["shape"] in (*study.SHAPES, "other"), case["id"]
        assert case["meant_to_see"] is (case["shape"] != "other"), case["id"]
        assert isinstance(case["line"], int) and case["line"] > 0 and case["path"].endswith(".py"), case["id"]
        assert study.wanted_part(case["symbol"]), case["id"]


def test_development_set_reaches_the_issue_size():
    cases = json.loads((study.CASES_DIR / "development.json").read_text())
    seen = [case for case in cases if case["meant_to_see"]]
    assert len(seen) >= 25
    assert {case["shape"] for case in seen} == set(study.SHAPES)
    assert len({case["repo"] for case in cases}) >= 5


@pytest.mark.parametrize("symbol, part", [
    ("megatron.core.parallel_state.is_inside_encoder", "is_inside_encoder"),
    ("megatron.core.optimizer.get_megatron_optimizer(no_weight_decay_cond=)", "no_weight_decay_cond"),
    ("SelfAttention.forward(rotary_pos_cos_sin=)", "rotary_pos_cos_sin"),
    ("megatron.training.get_model(vp_stage=)->model_provider", "vp_stage"),
    ("SelfAttention._adjust_key_value_for_inference", "_adjust_key_value_for_inference"),
])
def test_wanted_part_is_the_keyword_or_the_last_name(symbol, part):
    assert study.wanted_part(symbol) == part


CASE = {"id": "x", "repo": "o/p", "fix": "abcdef012", "candidate": "0.16.0", "path": "pkg/m.py", "line": 10,
        "shape": "call", "symbol": "megatron.core.optimizer.get_megatron_optimizer(no_weight_decay_cond=)",
        "meant_to_see": True, "source": ""}
NAME = "megatron.core.optimizer.get_megatron_optimizer(no_weight_decay_cond=)"


def finding(path="pkg/m.py", line=11, name=NAME, kind=c.UNEXPECTED_KEYWORD, guarded=False, also_at=()):
    return c.Finding(path, line, name, kind, guarded, also_at=list(also_at))


@pytest.mark.parametrize("found, hit", [
    (finding(), True),
    (finding(line=12), True),
    (finding(line=13), False),  # three lines away: another place
    (finding(line=40, also_at=[9]), True),  # the same failure reported again at the case's line
    (finding(path="pkg/other.py"), False),
    (finding(name="megatron.core.optimizer.get_megatron_optimizer(scale_lr_cond=)"), False),
    (finding(kind=c.DEPRECATED), False),
])
def test_a_finding_counts_only_at_the_case_with_its_name(found, hit):
    assert study.at_case(found, CASE, CASE["line"]) is hit


CALL = """import x

result = get_megatron_optimizer(
    config,
    model,
    no_weight_decay_cond=cond,
)


class Attn(Base):
    @staticmethod
    def forward(self,
                hidden):
        return hidden
"""


@pytest.mark.parametrize("line, span", [
    (3, (3, 7)),  # the call's first line: the whole call
    (6, (3, 7)),  # its keyword's line: the same call
    (1, (1, 1)),
    (12, (12, 13)),  # a def's header, not its body
    (14, (14, 14)),  # a line of the body: that statement
])
def test_statement_span_is_the_innermost_statement_or_a_header(line, span):
    assert study.statement_span(CALL, line) == span


def test_a_finding_on_another_line_of_the_case_statement_counts():
    case = {**CASE, "line": 3}
    assert study.at_case(finding(line=8), case, 3, (3, 7))
    assert not study.at_case(finding(line=8), case, 3)  # without the span, five lines away


class FakeGate:
    """Findings per revision, as Gate.findings returns them (the real gate runs in the study, on the snapshots)."""

    def __init__(self, before, after, changed=None):
        self.by_rev = {f"{CASE['fix']}^": before, CASE["fix"]: after}
        self.rewritten = changed or {}

    def changed(self, repo, fix):
        return self.rewritten

    def findings(self, repo, rev, version):
        return "0" * 40, self.by_rev[rev]

    def span(self, repo, rev, path, line):
        return line, line

    def ships(self, version, symbol):
        return True


@pytest.mark.parametrize("before, after, verdict, at_fix", [
    ([finding()], [], "FOUND", "gone"),
    ([finding(guarded=True)], [finding(guarded=True, line=30)], "FOUND-GUARDED", "guarded"),
    ([finding(line=50)], [finding(line=51)], "MISSED", "still unguarded at pkg/m.py:51"),
    ([], [], "MISSED", "gone"),
])
def test_score_case(before, after, verdict, at_fix):
    row = study.score_case(CASE, FakeGate(before, after))
    assert (row["verdict"], row["at_fix"]) == (verdict, at_fix)
    if verdict == "MISSED":
        assert row["why"]


def test_recall_by_shape_counts_only_the_four_shapes():
    rows = [{"shape": "call", "meant_to_see": True, "verdict": "FOUND"},
            {"shape": "call", "meant_to_see": True, "verdict": "MISSED"},
            {"shape": "override", "meant_to_see": True, "verdict": "FOUND-GUARDED"},
            {"shape": "other", "meant_to_see": False, "verdict": "FOUND"},
            {"shape": "call", "meant_to_see": True, "verdict": study.NOT_RUN}]  # no snapshot: not counted
    by = study.recall_by_shape(rows)
    assert by["call"] == {"cases": 2, "found": 1, "guarded": 0, "found_fix_lines": 0}
    assert by["override"] == {"cases": 1, "found": 0, "guarded": 1, "found_fix_lines": 0}
    assert by["other"]["cases"] == 1
    assert by["all four"] == {"cases": 3, "found": 1, "guarded": 1, "found_fix_lines": 0}


@pytest.mark.parametrize("before, changed, fix_lines", [
    ([finding(path="pkg/def.py", line=20)], {"pkg/def.py": {20}}, "FOUND"),  # another file, a rewritten line
    ([finding(path="pkg/def.py", line=20)], {"pkg/def.py": {21}}, "MISSED"),  # the fix rewrote another line
    ([finding(path="pkg/def.py", line=20)], {"pkg/m.py": {20}}, "MISSED"),  # ... or that line of another file
    ([finding(path="pkg/def.py", line=20, guarded=True)], {"pkg/def.py": {20}}, "FOUND-GUARDED"),
    ([finding(path="pkg/def.py", line=20, name="megatron.x(scale_lr_cond=)")], {"pkg/def.py": {20}}, "MISSED"),
    ([finding()], {}, "FOUND"),  # the first rule's hits count for the second too
])
def test_the_fix_lines_rule_counts_a_finding_on_a_statement_the_fix_rewrote(before, changed, fix_lines):
    row = study.score_case(CASE, FakeGate(before, [], changed))
    assert row["fix_lines"] == fix_lines
    assert row["verdict"] == ("FOUND" if before == [finding()] else "MISSED")  # the first rule is unchanged


def _git(repo: Path, *args: str) -> str:
    import subprocess
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_gate_changed_names_the_old_lines_a_fix_removed_or_rewrote(tmp_path):
    repo = tmp_path / "o+p" / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "a.py").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    (repo / "gone.py").write_text("x\ny\n")
    (repo / "notes.txt").write_text("a\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "before")
    lines = (repo / "a.py").read_text().splitlines()
    lines[2] = "rewritten"          # old line 3
    del lines[6:8]                  # old lines 7 and 8
    lines.insert(9, "inserted")     # a pure insertion names no old line
    (repo / "a.py").write_text("\n".join(lines) + "\n")
    (repo / "gone.py").unlink()
    (repo / "notes.txt").write_text("b\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fix")
    gate = study.Gate(tmp_path, tmp_path, {})
    assert gate.changed("o/p", _git(repo, "rev-parse", "HEAD")) == {"a.py": {3, 7, 8}, "gone.py": {1, 2}}


def _item(project: str, n: int) -> dict:
    return {"project": project, "path": f"{project}/m.py", "line": n, "name": f"megatron.x{n}", "kind": c.MISSING_NAME}


def test_the_review_sample_takes_hash_ranked_rounds_up_to_the_cap_then_on_to_the_minimum():
    pool = {study.key(x): x for p, n in (("big", 80), ("mid", 10), ("small", 3)) for x in map(lambda i: _item(p, i), range(n))}
    taken = study.sample(pool)
    per = {p: sum(x["project"] == p for x in taken) for p in ("big", "mid", "small")}
    assert per["small"] == 3 and per["mid"] == 10  # small pools are taken whole once the rounds pass them
    assert per["big"] == study.SAMPLE_MIN - 13 < 80  # the rounds stop once the set holds the minimum
    for project in per:
        mine = sorted((x for x in pool.values() if x["project"] == project), key=study.rank)
        assert [x for x in taken if x["project"] == project] == mine[:per[project]]  # the best-ranked, in order


def test_one_more_finding_changes_only_its_own_project_sample_by_at_most_one():
    projects = [f"p{i}" for i in range(8)]  # 8 x the cap reaches the minimum: the rounds stop at the cap
    pool = {study.key(x): x for p in projects for x in map(lambda i: _item(p, i), range(20))}
    before = {study.key(x) for x in study.sample(pool)}
    assert len(before) == 8 * study.SAMPLE_PER_PROJECT >= study.SAMPLE_MIN
    for extra in (*(_item(p, 100 + n) for n, p in enumerate(projects)), _item("new", 1)):
        after = {study.key(x) for x in study.sample({**pool, study.key(extra): extra})}
        assert after - before <= {study.key(extra)}
        assert len(before - after) <= 1 and all(k[0] == extra["project"] for k in before - after)


def test_a_missing_module_counts_for_the_names_it_holds():
    case = {**CASE, "shape": "import", "symbol": "megatron.core.transformer.moe.legacy_a2a_token_dispatcher.Dispatcher"}
    module = "megatron.core.transformer.moe.legacy_a2a_token_dispatcher"
    assert study.at_case(finding(name=module, kind=c.MISSING_MODULE), case, CASE["line"])
    assert not study.at_case(finding(name="megatron.core.transformer.moe.legacy", kind=c.MISSING_MODULE), case,
                             CASE["line"])  # a prefix of the text, not a module that holds the symbol
    assert not study.at_case(finding(name=module, kind=c.MISSING_NAME), case, CASE["line"])


def test_a_case_without_its_snapshot_is_not_run_rather_than_missed(tmp_path):
    gate = study.Gate(tmp_path / "no-mirror", tmp_path, {})
    row = study.score_case(CASE, gate)
    assert row["verdict"] == study.NOT_RUN and "fetch o/p first" in row["why"]
