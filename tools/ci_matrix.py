"""Split `nox -l --json` into the GitHub Actions matrices of .github/workflows/matrix.yml.

    nox -l --json | python tools/ci_matrix.py -      # or: python tools/ci_matrix.py  (runs nox itself)

Prints ``key=value`` lines for $GITHUB_OUTPUT: ``cpu``, ``gpu`` and ``scheduled`` are
``{"include": [{"session": ...}, ...]}`` matrices (and ``smoke``), and ``has_cpu`` / ``has_gpu`` / ``has_scheduled``
say whether each is non-empty (a job with an empty matrix fails, so the workflow skips it).
Every session lands in exactly one matrix: tag ``gate`` (or name ``gate``) or ``companions`` -> scheduled (weekly cron),
tag ``gpu`` or a ``gpu-`` name -> gpu (self-hosted runners), tag ``smoke`` -> smoke (the plain-install checks, one
job per pin, apart from cpu's time budget), anything else -> cpu (ubuntu-latest); a session tagged
``requirement`` is in none: it runs inside the job of the session that requires it.
Standard library only: it runs before anything is installed.
"""
from __future__ import annotations

import json
import subprocess
import sys

REQUIREMENT_TAG = "requirement"
SMOKE_TAG = "smoke"
COMPANIONS_TAG = "companions"  # real installs of the companions on each pin: downloads, weekly like the gate
KINDS = ("cpu", "gpu", "scheduled", "smoke")


def classify(session: dict) -> str | None:
    """The matrix a session runs in; None for a session that only runs as another's requirement (nox
    ``requires=``: a checkpoint-lane venv is built inside the pair job that needs it)."""
    name, tags = session["session"], set(session.get("tags") or ())
    if REQUIREMENT_TAG in tags:
        return None
    if name == "gate" or "gate" in tags or COMPANIONS_TAG in tags:
        return "scheduled"
    if name.startswith("gpu-") or "gpu" in tags:
        return "gpu"
    if SMOKE_TAG in tags:
        return "smoke"
    return "cpu"


def matrices(sessions: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {kind: {"include": []} for kind in KINDS}
    for s in sessions:  # "session" is unique: parametrized ones read name(param=...)
        kind = classify(s)
        if kind is not None:
            out[kind]["include"].append({"session": s["session"]})
    return out


def github_output(sessions: list[dict]) -> str:
    lines = []
    for key, matrix in matrices(sessions).items():
        lines.append(f"{key}={json.dumps(matrix, separators=(',', ':'))}")
        lines.append(f"has_{key}={'true' if matrix['include'] else 'false'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["-"]:
        text = sys.stdin.read()
    elif argv:
        with open(argv[0], encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = subprocess.run(["nox", "-l", "--json"], check=True, capture_output=True, text=True).stdout
    try:
        sessions = json.loads(text)
    except json.JSONDecodeError as exc:
        # e.g. plain `nox` (no uv next to it) prints pip's install log on stdout before the JSON
        print(f"ci_matrix: `nox -l --json` output is not JSON ({exc}); it starts with {text[:120]!r}. "
              'Install nox with uv: python -m pip install "nox[uv]"', file=sys.stderr)
        return 1
    if not sessions:
        print("ci_matrix: nox listed no sessions", file=sys.stderr)
        return 1
    print(github_output(sessions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
