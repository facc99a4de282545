# SPDX-License-Identifier: Apache-2.0
"""``python -m compat gate``: argument parsing and exit codes (0 compatible, 1 review, 2 usage, 3 unreadable)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from ...errors import one_line
from . import __doc__ as GATE_DOC
from .accept_pin import accept
from .candidate import GateUsageError
from .config_gate import gate, load_registry, resolve_against


def _json_safe(obj):
    """Non-finite floats (a candidate's ``x: float = 1e999``) as text: ``Infinity`` is not JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def cmd_gate(args) -> int:
    if getattr(args, "project", None) or getattr(args, "window", None):
        from .surface.cli import run_surface

        return run_surface(args)
    if args.candidate is None:
        print("usage error: CANDIDATE is required (or --project PATH --window LOW..HIGH)", file=sys.stderr)
        return 2
    if args.replace and not args.accept:
        print("usage error: --replace only applies with --accept", file=sys.stderr)
        return 2
    # Path("") is ".", a directory: an empty --registry/--matrix is refused, never read as "use the default"
    registry, matrix = (None if p is None else Path(p) for p in (args.registry, getattr(args, "matrix", None)))
    tools = args.matrix_tools  # None in the package's own CLI: matrix.yaml belongs to the repository's tools/
    try:
        reg = load_registry(registry)
        against = resolve_against(reg, args.against) if args.against is not None else None
        pinned = tools.pinned(matrix, registry) if tools is not None else None
        report = gate(args.candidate, reg, against, pinned=pinned)
        if args.accept:
            accept(report, registry, replace=args.replace, pin=tools.pinner(matrix, registry) if tools else None)
    except GateUsageError as exc:

        print(f"usage error: {one_line(exc)}", file=sys.stderr)
        return 2
    print(json.dumps(_json_safe(report.to_dict()), indent=1, default=str, allow_nan=False) if args.json
          else report.to_markdown())
    for section, lane in (("Checkpoints", report.checkpoints()), ("Training", report.training())):
        if lane and lane["status"] == "unreadable":  # the report went out without that section
    
            print(f"warning: {one_line(lane['error'])}; the report has no {section} section", file=sys.stderr)
    return report.exit_code


def register(p, matrix_tools=None) -> None:
    """The ``gate`` command's arguments (its help line is in ``cli.COMMANDS``). ``matrix_tools`` (tools/matrix.py's,
    in this repository) adds ``--matrix``: it lists the pins (``pinned(matrix, registry)``) and pins an accepted
    release (``pinner(matrix, registry)``)."""
    p.description = GATE_DOC
    p.add_argument("candidate", nargs="?",
                   help="megatron-core==VERSION, VERSION, latest, a wheel or sdist path, or a Megatron-LM checkout. "
                        "The keywords win over a file of that name: write ./latest for a directory named latest")
    p.add_argument("--against", metavar="VERSION",
                   help="registry release to compare with (default: the newest; for a candidate that is already a "
                        "registry release, the pin before it: matrix.yaml's with the matrix tools, else the newest "
                        "release of the minor series before it)")
    p.add_argument("--registry", metavar="PATH", help="registry.json to read (and with --accept, write)")
    if matrix_tools is not None:
        p.add_argument("--matrix", metavar="PATH", help="matrix.yaml that --accept pins the candidate in")
    p.add_argument("--accept", action="store_true",
                   help="after review: write the candidate into the registry (exit 0); the matrix tools' gate "
                        "(python -m tools.matrix gate) also pins it in matrix.yaml")
    p.add_argument("--replace", action="store_true",
                   help="with --accept: overwrite a registry release of the same version whose config differs "
                        "(refused otherwise)")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--project", metavar="PATH",
                   help="surface gate: what CANDIDATE breaks in this project's own code, file and line "
                        "(--against V: the release it runs on now)")
    p.add_argument("--window", metavar="LOW..HIGH",
                   help="with --project: check every release in the range, one table (use x release)")
    p.add_argument("--all-rows", action="store_true",
                   help="with --window: also list uses that fail the same way on every release of the range")
    p.set_defaults(func=cmd_gate, matrix_tools=matrix_tools)
