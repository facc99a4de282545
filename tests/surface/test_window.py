"""``--window``: the use-by-release table (JSON and markdown), grouped by file, listing only the rows that change."""
from __future__ import annotations

import json

import pytest

from compat.tooling.cli import main

from .builders import UPGRADE_PROJECT, make_project, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_window_table_use_by_release(tmp_path, releases, capsys):
    project = make_project(tmp_path / "proj", UPGRADE_PROJECT)
    code = main(["gate", "--project", str(project), "--window", "0.1.0..0.2.0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["releases"] == ["0.1.0", "0.1.5", "0.2.0"] and out["supported"] == []
    rows = {(r["line"], r["name"]): r["cells"] for r in out["rows"]}
    assert rows[(10, "megatron.core.enums.ModelType.encoder_and_decoder")] == {
        "0.1.0": "ok", "0.1.5": "deprecated", "0.2.0": "BREAKS"}
    assert rows[(11, "megatron.core.packed_seq_params.PackedSeqParams(total_tokens=)")] == {
        "0.1.0": "BREAKS", "0.1.5": "BREAKS", "0.2.0": "ok"}
    main(["gate", "--project", str(project), "--window", "0.1.0..0.2.0"])
    text = capsys.readouterr().out
    assert "| 0.1.0 | 0.1.5 | 0.2.0 |" in text and "supported (no unguarded break): none" in text


def test_window_table_groups_by_file_and_lists_only_rows_that_change(tmp_path, wheels, capsys):
    from compat.tooling.cli import main

    project = make_project(tmp_path / "proj", {
        "a.py": "from megatron.core import mpu\nmpu.get_tensor_and_expert_parallel_rank()\nmpu.gone_everywhere()\n",
        "b.py": "from megatron.core.specs import get_moe_module_spec\nget_moe_module_spec(moe_use_legacy_grouped_gemm=1)\n",
    })
    assert main(["gate", "--project", str(project), "--window", "0.3.0..0.4.0"]) == 1
    text = capsys.readouterr().out
    assert "### `a.py`" in text and "### `b.py`" in text
    assert "get_tensor_and_expert_parallel_rank" in text and "gone_everywhere" not in text
    assert "1 uses fail the same way on every release" in text
    main(["gate", "--project", str(project), "--window", "0.3.0..0.4.0", "--all-rows"])
    assert "gone_everywhere" in capsys.readouterr().out
