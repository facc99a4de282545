"""Import each module named on the command line, in order, in this interpreter; print one JSON object.

Run by the smoke-<version> nox sessions with the plain install's Python (never imported by the tests). Each value is
"ok" or "<cause>: <detail>": "undeclared import: numpy" (a module the release imports but its metadata does not
declare), "CPU-only import error: ..." (the message names CUDA, a GPU or triton), "import error: Type: message".
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import sys

GPU_WORDS = ("cuda", "gpu", "nvidia", "nccl", "cudnn")


def cause(module: str, exc: BaseException) -> str:
    message = " ".join(str(exc).split())[:300]
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and not missing.startswith("megatron"):
        top = missing.split(".")[0]
        if importlib.util.find_spec(top) is None:
            return f"undeclared import: {top}"
    if any(word in message.lower() for word in GPU_WORDS):
        return f"CPU-only import error: {type(exc).__name__}: {message}"
    return f"import error: {type(exc).__name__}: {message}"


def main(modules: list[str]) -> dict[str, str]:
    out = {}
    for module in modules:
        try:
            importlib.import_module(module)
            out[module] = "ok"
        except BaseException as exc:  # noqa: BLE001  (a release's import may raise anything, SystemExit included)
            out[module] = cause(module, exc)
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), sort_keys=True))
