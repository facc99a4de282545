"""Tracked files carry no machine's paths, edit sys.path only in tests/conftest.py, and tests do not import
benchmarks/."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MACHINE_PATH = re.compile(r"(?<![\w.<$])/(?:work|home|Users|root|tmp)/")
SYS_PATH_EDIT = re.compile(r"sys\.path(?:\.insert|\.append|\.extend|\[[^\]]*\]\s*=)")
TEST_IMPORTS_BENCHMARKS = re.compile(r"^\s*(?:from|import)\s+benchmarks\b|sys\.path.*benchmarks", re.M)

MACHINE_PATH_ALLOWED = {
    "tests/contract/data/launch_args.json": "arguments harvested verbatim from real launch scripts (a checkpoint "
                                            "directory one of them passes); the data must match the scripts",
}
SYS_PATH_ALLOWED = {
    "tests/conftest.py": "the one edit: the checkout root appended, for tools/, behind an installed compat (pytest's "
                         "pythonpath option prepends, which would shadow the unit session's wheel)",
}


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [name for name in out.decode().split("\0") if name and (REPO / name).is_file()]


def text_of(name: str) -> str:
    return (REPO / name).read_bytes().decode("utf-8", errors="replace")


def machine_paths(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if MACHINE_PATH.search(line)]


def test_machine_path_pattern():
    mirror, temp = "/" + "work/.mirror", "/" + "tmp/a.json"  # spelled apart: this file is scanned too
    assert machine_paths(f"x = Path('{mirror}')\ncache under ~/.cache\n") == [f"x = Path('{mirror}')"]
    assert machine_paths(f"  --out {temp}\n$TMPDIR/x <checkout>/y\n") == [f"--out {temp}"]
    assert not machine_paths("src/megatron/core/x.py and ./tmp/x and /usr/bin/time")


def test_no_machine_paths_in_tracked_files():
    found = {name: machine_paths(text_of(name)) for name in tracked_files()}
    found = {name: lines for name, lines in found.items() if lines and name not in MACHINE_PATH_ALLOWED}
    assert found == {}


def test_sys_path_is_edited_only_where_allowed():
    editing = {name for name in tracked_files() if name.endswith((".py", ".sh")) and SYS_PATH_EDIT.search(text_of(name))}
    assert editing - set(SYS_PATH_ALLOWED) == set(), ("run it as a module (python -m ...) from the root, give a child "
                                                      "process PYTHONPATH, or load a test folder's file with "
                                                      "tools/siblings.py instead")
    assert set(SYS_PATH_ALLOWED) - editing == set(), "an allowed edit is gone: drop it from SYS_PATH_ALLOWED"


def test_conftest_edits_sys_path_once():
    assert len(SYS_PATH_EDIT.findall(text_of("tests/conftest.py"))) == 1


def test_sys_path_edit_pattern():
    edit = "sys.path"  # spelled apart: this file is scanned too
    assert SYS_PATH_EDIT.search(edit + ".insert(0, ROOT)") and SYS_PATH_EDIT.search(edit + "[:0] = [a]")
    assert not SYS_PATH_EDIT.search("for entry in sys.path:")


def test_tests_do_not_import_benchmarks():
    tests = [name for name in tracked_files() if name.startswith("tests/") and name.endswith(".py")]
    assert [name for name in tests if TEST_IMPORTS_BENCHMARKS.search(text_of(name))] == []


# Words only the people who did the work can resolve: issue numbers, work-branch names, numbered sessions and passes.
PROCESS_WORDS = re.compile(r"\bissues?[- ]#?\d+\b|\bh1\d[a-z]?(?![a-z0-9])|\bsessions? \d+\b|\bpass \d+\b|\bround \d+\b",
                           re.I)  # a work label also where an underscore follows it (a file or key name)


def test_process_word_pattern():
    assert PROCESS_WORDS.search("see " + "issue" + " 15") and PROCESS_WORDS.search("branch " + "h" + "15f")
    assert PROCESS_WORDS.search("in " + "session" + " 7") and PROCESS_WORDS.search("pass" + " 3")
    assert PROCESS_WORDS.search("$TMPDIR/" + "h" + "16_mlm") and PROCESS_WORDS.search('"' + "h" + '15s_cpu_s"')
    assert not PROCESS_WORDS.search("passes 4 positionals; 0.15.3; h100 GPUs; an issue with 2 ranks")


def test_no_process_words_in_tracked_files():
    found = {name: PROCESS_WORDS.findall(text_of(name)) for name in tracked_files()}
    assert {name: words for name, words in found.items() if words} == {}
