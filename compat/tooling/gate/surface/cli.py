# SPDX-License-Identifier: Apache-2.0
"""``python -m compat gate CANDIDATE --project PATH`` and ``--window LOW..HIGH``: exit 0 nothing unguarded breaks,
1 something does, 2 usage, 3 unreadable (candidate, project)."""
from __future__ import annotations

import gc
import json
import sys
from contextlib import contextmanager

from ..candidate import GateUsageError

# gc's default (a pass every 700 allocations) ran 2,800 passes in a first run on NeMo, 1 s of 8 CPU seconds, over
# millions of syntax-tree nodes that reference counting frees anyway (the passes found 88,000 objects in cycles);
# with these thresholds it runs a few passes, which still collect those cycles
_FEWER_COLLECTIONS = (50_000, 50, 100)


@contextmanager
def fewer_collections():
    """The cyclic garbage collector's thresholds raised for one gate run (restored after)."""
    before = gc.get_threshold()
    gc.set_threshold(*_FEWER_COLLECTIONS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def run_surface(args) -> int:
    with fewer_collections():
        return _run_surface(args)


def _run_surface(args) -> int:
    from .release_gate import surface_gate
    from .window import window

    try:
        if not args.project:
            raise GateUsageError("--window needs --project PATH (the code to check)")
        if args.accept:
            raise GateUsageError("--accept belongs to the config gate; run it without --project")
        if args.window:
            if args.candidate is not None or args.against is not None:
                raise GateUsageError("--window takes no CANDIDATE and no --against: it checks every release "
                                     "in the range")
            report = window(args.project, args.window)
        else:
            if args.candidate is None:
                raise GateUsageError("CANDIDATE is required (megatron-core==VERSION, VERSION, latest, a wheel, "
                                     "an sdist or a checkout), or --window LOW..HIGH")
            report = surface_gate(args.candidate, args.project, args.against)
    except GateUsageError as exc:
        print(f"usage error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict(), indent=1, default=str))
    elif args.window:
        print(report.to_markdown(all_rows=getattr(args, "all_rows", False)))
    else:
        print(report.to_markdown())
    return report.exit_code
