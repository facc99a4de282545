"""tools/siblings.py: a file imported as running it would see its bare sibling imports, with sys.path untouched."""
from __future__ import annotations

import sys
import uuid

import pytest

from tools.siblings import load_file, sibling_imports


@pytest.fixture
def names():
    tag = uuid.uuid4().hex[:8]
    made = [f"sib_main_{tag}", f"sib_helper_{tag}", f"sib_leaf_{tag}"]
    yield made
    for name in made:
        sys.modules.pop(name, None)


def test_siblings_load_first_and_sys_path_stays(tmp_path, names):
    main, helper, leaf = names
    (tmp_path / f"{leaf}.py").write_text("VALUE = 3\n")
    (tmp_path / f"{helper}.py").write_text(f"from {leaf} import VALUE\nDOUBLE = 2 * VALUE\n")
    (tmp_path / f"{main}.py").write_text(f"import json\nimport {helper}\n\ndef later():\n    import {leaf}\n"
                                         f"    return {leaf}.VALUE\n\nRESULT = {helper}.DOUBLE\n")
    assert sibling_imports(tmp_path / f"{main}.py") == [helper, leaf]  # json is no sibling
    before = list(sys.path)
    module = load_file(tmp_path / f"{main}.py")
    assert (module.RESULT, module.later()) == (6, 3)
    assert sys.modules[main] is module and sys.modules[leaf].__file__ == str(tmp_path / f"{leaf}.py")
    assert sys.path == before
    assert load_file(tmp_path / f"{main}.py") is module  # once


def test_a_name_taken_by_another_file_is_refused(tmp_path, names):
    main, helper, _ = names
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / f"{main}.py").write_text("X = 1\n")
    (tmp_path / f"{main}.py").write_text("X = 2\n")
    load_file(tmp_path / "a" / f"{main}.py")
    with pytest.raises(ImportError, match="already holds"):
        load_file(tmp_path / f"{main}.py")


def test_a_cycle_is_refused_and_leaves_nothing(tmp_path, names):
    main, helper, _ = names
    (tmp_path / f"{main}.py").write_text(f"import {helper}\n")
    (tmp_path / f"{helper}.py").write_text(f"import {main}\n")
    with pytest.raises(ImportError, match="cycle"):
        load_file(tmp_path / f"{main}.py")
    assert main not in sys.modules and helper not in sys.modules
