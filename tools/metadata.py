"""Build compat/tooling/data/metadata.json: Requires-Python and Requires-Dist of every registry release, read from its real
wheel (through the download cache), for the gate's metadata diff. Kept apart from registry.json, which another tool
regenerates.

    python -m tools.metadata            # every registry release
    python -m tools.metadata --check    # exit 1 when the file is not what the wheels say
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from compat.registry import registry  # noqa: E402
from compat.tooling import refresh  # noqa: E402
from compat.tooling.archive import open_source  # noqa: E402
from compat.tooling.fsutil import atomic_write_text  # noqa: E402

OUT = ROOT / "compat" / "tooling" / "data" / "metadata.json"


def release_metadata(version: str) -> dict:
    source = open_source(refresh.download(version))
    headers = source.metadata_headers(("Requires-Python", "Requires-Dist"))
    return {"requires_python": (headers.get("Requires-Python") or [None])[-1],
            "requires_dist": headers.get("Requires-Dist", []), "source": source.label}


def build() -> str:
    releases = {v: release_metadata(v) for v in registry().versions()}
    return json.dumps({"format": 1, "releases": releases}, indent=1) + "\n"


def main(argv: list[str]) -> int:
    text = build()
    if "--check" in argv:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT}: {'up to date' if same else 'differs from the wheels: run python -m tools.metadata'}")
        return 0 if same else 1
    atomic_write_text(OUT, text)
    print(f"wrote {OUT} ({len(json.loads(text)['releases'])} releases)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
