"""The scan cache's key covers every module a scan's results come from: a change to a detector (a subpackage) or to
the shared AST helpers makes new keys, so a warm run never reuses results of other scanning code (the key hashes
the bytes of every file scanner_sources names)."""
from __future__ import annotations

import sys
from pathlib import Path

from compat.tooling.gate.surface import scan_cache
from compat.tooling.gate.surface.project import scan_source


def test_the_key_reads_every_surface_module_and_the_ast_helpers():
    scan_source("from megatron.core import parallel_state\nparallel_state.get_data_parallel_rank()\n")
    loaded = {Path(m.__file__).resolve() for name, m in list(sys.modules.items())
              if (name.startswith("compat.tooling.gate.surface") or name == "compat.tooling.ast_tools")
              and getattr(m, "__file__", None)}
    sources = {p.resolve() for p in scan_cache.scanner_sources()}
    assert any(p.parent.name == "detectors" for p in loaded)
    assert loaded <= sources
