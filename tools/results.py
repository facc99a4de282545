"""Where the checkpoint lane, the equivalence lane and the smoke sessions write what they measured.

benchmarks/results/ is tracked: it is written only when a run is asked to record (``--record``). Every other run
writes under benchmarks/results/raw/, which git ignores, so a normal ``nox -t cpu`` leaves ``git status`` clean."""
from __future__ import annotations

from pathlib import Path

RECORDED = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
UNRECORDED = RECORDED / "raw"


def results_dir_for(record: bool) -> Path:
    return RECORDED if record else UNRECORDED
