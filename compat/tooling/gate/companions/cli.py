# SPDX-License-Identifier: Apache-2.0
"""``mcore-compat window --companion NAME``: which releases of a companion work with which pinned megatron-core.
Exit 0 a known-good pair exists, 1 none does, 2 usage, 3 unreadable (index, wheel)."""
from __future__ import annotations

import argparse
import json


def _versions(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def register(p: argparse.ArgumentParser) -> None:
    from .catalog import companions
    from .window import DEFAULT_LAST

    p.add_argument("--companion", required=True, choices=sorted(companions()),
                   help="the package that rides on megatron-core")
    p.add_argument("--releases", type=_versions, metavar="V1,V2",
                   help=f"the companion's releases to check (default: its newest {DEFAULT_LAST})")
    p.add_argument("--last", type=int, default=DEFAULT_LAST, metavar="N",
                   help="without --releases: the newest N releases (0: all)")
    p.add_argument("--pins", type=_versions, metavar="V1,V2",
                   help="megatron-core releases to check against (default: the newest patch of each minor series "
                        "in the registry, as matrix.yaml pins them)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..surface.cli import fewer_collections
    from .catalog import companion
    from .window import companion_window

    with fewer_collections():
        result = companion_window(companion(args.companion), releases=args.releases, last=args.last,
                                  pins=args.pins)
    print(json.dumps(result.to_dict(), indent=1) if args.json else result.to_markdown())
    return result.exit_code
