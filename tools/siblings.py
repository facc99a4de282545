"""Import a file of the checkout as running it (``python FILE``) or pytest's rootdir import mode would: its
bare-name imports of modules in its own folder find those files, without that folder on sys.path.

    load_file(path, name=None)   the module of ``path`` (registered in sys.modules as ``name``, default its stem),
                                 after every sibling it imports by bare name (recursively), each under that name

For the benchmarks that reuse a test folder's helpers (tests/unit's hostile catalogue, tests/contract's label cases)
and for the lane scripts loaded as modules (tools/lane_common.load_script).
"""
from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def sibling_imports(path: Path) -> list[str]:
    """The modules of ``path``'s folder that ``path`` imports by bare name (``import x``, ``from x import y``,
    anywhere in the file), in the order they first appear."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops = [node.module.split(".")[0]]
        else:
            continue
        names += [t for t in tops if t not in names and t != path.stem and (path.parent / f"{t}.py").is_file()]
    return names


def load_file(path: str | Path, name: str | None = None, *, _loading: tuple[Path, ...] = ()) -> ModuleType:
    path = Path(path).resolve()
    if path in _loading:
        raise ImportError(f"cannot load {path}: its sibling imports form a cycle ({' -> '.join(p.name for p in _loading)})")
    name = name or path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() != path:
            raise ImportError(f"cannot load {path} as {name!r}: sys.modules already holds {name!r} from "
                              f"{getattr(loaded, '__file__', None)}")
        return loaded
    for sibling in sibling_imports(path):
        load_file(path.parent / f"{sibling}.py", _loading=(*_loading, path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
