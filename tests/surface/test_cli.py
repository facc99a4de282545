"""The surface gate through the CLI (``gate --project``): exit codes 0/1/2/3, the JSON findings, one error line
each for a bad project or candidate."""
from __future__ import annotations

import json

from compat.tooling.cli import main

from .builders import UPGRADE_PROJECT, make_project


def test_cli_exit_codes(tmp_path, releases, capsys):
    clean = make_project(tmp_path / "clean", {"a.py": "from megatron.core import parallel_state\n"})
    broken = make_project(tmp_path / "broken", UPGRADE_PROJECT)
    new = str(releases["0.2.0"])
    assert main(["gate", new, "--project", str(clean)]) == 0
    assert main(["gate", new, "--project", str(broken)]) == 1
    capsys.readouterr()
    assert main(["gate", new, "--project", str(broken), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["findings"][0]) >= {"path", "line", "name", "kind", "guarded", "instead"}
    assert main(["gate", "--project", str(clean), "--window", "0.2.0"]) == 2
    assert main(["gate", "--project", str(clean), "--window", "0.2.0..0.1.0"]) == 2
    assert main(["gate", new, "--project", str(clean), "--window", "0.1.0..0.2.0"]) == 2
    assert main(["gate", "--window", "0.1.0..0.2.0"]) == 2
    assert main(["gate", new, "--project", str(clean), "--accept"]) == 2
    assert main(["gate"]) == 2  # the config gate still needs a candidate
    capsys.readouterr()
    assert main(["gate", new, "--project", str(tmp_path / "missing")]) == 3
    corrupt = tmp_path / "megatron_core-9.9.9-py3-none-any.whl"
    corrupt.write_bytes(b"PK\x03\x04 not a zip")
    assert main(["gate", str(corrupt), "--project", str(clean)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err) and "Traceback" not in "".join(err)
