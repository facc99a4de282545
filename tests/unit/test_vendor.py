"""`python -m compat vendor`: the copy works under another package name with only stdlib + packaging."""
from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import packaging
import pytest
from source_trees import parsed

import compat
from compat.registry import registry
from compat.tooling import vendor as v
from compat.tooling.cli import main

COMPAT_DIR = Path(compat.__file__).resolve().parent


def _host(tmp_path: Path) -> Path:
    for pkg in ("hostpkg", "hostpkg/_vendor"):
        (tmp_path / pkg).mkdir(parents=True, exist_ok=True)
        (tmp_path / pkg / "__init__.py").write_text("")
    return tmp_path / "hostpkg" / "_vendor" / "mcore_compat"


def _snapshot(root: Path, skip: Path) -> dict:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        if d == skip or skip in d.parents:
            continue
        for name in dirnames + filenames:
            if d / name == skip:
                continue
            st = (d / name).lstat()
            out[str((d / name).relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def vendored(tmp_path):
    dest = _host(tmp_path)
    assert main(["vendor", str(dest)]) == 0
    return dest


def test_no_absolute_self_imports():
    """A vendored copy lives under another name: `compat.x` / `from compat import` would break it."""
    bad = []
    for path in sorted(COMPAT_DIR.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = ast.unparse(node.func)
                if func.endswith(("import_module", "__import__", "resources.files")):
                    names = [str(node.args[0].value)]
            bad += [f"{path.name}:{node.lineno}: {n}" for n in names if n == "compat" or n.startswith("compat.")]
    assert not bad, "absolute imports of compat:\n" + "\n".join(bad)


def test_manifest_records_version_registry_and_hashes(vendored):
    manifest = json.loads((vendored / "VENDORED.json").read_text())
    assert manifest["version"] == compat.__version__
    assert manifest["registry_newest"] == registry().newest()
    expected = ({p.relative_to(COMPAT_DIR).as_posix() for p in COMPAT_DIR.glob("*.py")} - {"__main__.py"}
                | {f"data/{p.name}" for p in (COMPAT_DIR / "data").glob("*.json")} | {"LICENSE", "NOTICE", "py.typed"})
    assert set(manifest["files"]) == expected  # the runtime: no tooling/, no CLI entry point, no lane data
    assert not any(rel.startswith("tooling/") for rel in manifest["files"])
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256((vendored / rel).read_bytes()).hexdigest() == digest
        assert (vendored / rel).read_bytes() == (COMPAT_DIR / rel).read_bytes()


def test_vendored_copy_runs_isolated_with_only_stdlib_and_packaging(tmp_path, vendored):
    # -S drops site-packages; the environment is built here (no PYTHON* variable of ours, PYTHONSAFEPATH: no working
    # directory), so the child's PYTHONPATH (the host project, and packaging copied next to it) is all it can import
    # beyond the standard library.
    deps = tmp_path / "deps"
    shutil.copytree(Path(packaging.__file__).parent, deps / "packaging",
                    ignore=shutil.ignore_patterns("__pycache__"))
    modules = sorted(p.stem for p in vendored.glob("*.py") if p.stem not in ("__init__", "__main__"))
    script = f"""
import importlib, json, sys
import hostpkg._vendor.mcore_compat as m
out = {{"fsdp": repr(m.ddp_kwargs({{"use_megatron_fsdp": True}}, None, "0.13.1", dtype_format="str")),
       "resolver": repr(m.resolve_ddp_overrides({{}}, {{}})),
       "file": m.__file__}}
for name in {modules!r}:
    importlib.import_module("hostpkg._vendor.mcore_compat." + name)
out["heavy"] = sorted(k for k in sys.modules if k.split(".")[0] in ("torch", "megatron", "compat", "yaml"))
out["site"] = [p for p in sys.path if "site-packages" in p]
print(json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PYTHONPATH=os.pathsep.join([str(tmp_path), str(deps)]), PYTHONSAFEPATH="1")
    proc = subprocess.run([sys.executable, "-S", "-B", "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["fsdp"] == "{'use_custom_fsdp': True}"
    assert out["resolver"] == "{'grad_reduce_in_fp32': True}"
    assert Path(out["file"]).parent == vendored
    assert out["heavy"] == [] and out["site"] == []


def test_check_clean_then_catches_edit_delete_extra(vendored, capsys):
    capsys.readouterr()
    assert main(["vendor", "--check", str(vendored)]) == 0
    assert "clean" in capsys.readouterr().out

    with open(vendored / "resolution.py", "a") as fh:
        fh.write("# local patch\n")
    assert main(["vendor", "--check", str(vendored)]) == 1
    text = capsys.readouterr().out
    assert "modified: resolution.py" in text and "drift" in text

    (vendored / "data" / "rules.json").unlink()
    (vendored / "notes.txt").write_text("mine")
    assert main(["vendor", "--check", "--json", str(vendored)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["modified"] == ["resolution.py"]
    assert report["missing"] == ["data/rules.json"]
    assert report["extra"] == ["notes.txt"]
    assert report["stale_registry"] is None and report["drift"] is True

    # re-vendoring over a vendored copy restores it (user files it does not own stay, and stay reported)
    assert main(["vendor", str(vendored)]) == 0
    assert v.check(vendored)["modified"] == v.check(vendored)["missing"] == []


def test_check_reports_stale_registry(tmp_path, capsys):
    old_src = tmp_path / "old" / "compat"
    shutil.copytree(COMPAT_DIR, old_src, ignore=shutil.ignore_patterns("__pycache__"))
    data = json.loads((old_src / "data" / "registry.json").read_text())
    newest = registry().newest()
    data["releases"] = [r for r in data["releases"] if r["version"] != newest]
    (old_src / "data" / "registry.json").write_text(json.dumps(data))

    dest = _host(tmp_path)
    v.vendor(dest, source=old_src)
    capsys.readouterr()
    assert main(["vendor", "--check", str(dest)]) == 1
    text = capsys.readouterr().out
    assert "stale registry" in text and newest in text
    report = v.check(dest)
    assert report["modified"] == report["missing"] == report["extra"] == []
    assert report["stale_registry"]["source_newest"] == newest
    assert report["stale_registry"]["vendored_newest"] != newest


def test_cli_end_to_end_exit_codes(tmp_path):
    dest = _host(tmp_path)
    run = lambda *a: subprocess.run([sys.executable, "-m", "compat", "vendor", *a], capture_output=True,  # noqa: E731
                                    text=True, cwd=COMPAT_DIR.parent, timeout=120)
    assert run(str(dest)).returncode == 0
    assert run("--check", str(dest)).returncode == 0
    (dest / "version.py").unlink()
    proc = run("--check", str(dest))
    assert proc.returncode == 1 and "missing: version.py" in proc.stdout
    proc = run("--check", str(tmp_path))  # not a vendored copy
    assert proc.returncode == 3 and "VENDORED.json" in proc.stderr


@pytest.mark.parametrize("kind", ["symlink", "symlink-component", "dotdot"])
def test_unsafe_destinations_refused(tmp_path, kind, capsys):
    _host(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    if kind == "symlink":
        (tmp_path / "hostpkg" / "_vendor" / "link").symlink_to(target, target_is_directory=True)
        dest = tmp_path / "hostpkg" / "_vendor" / "link"
    elif kind == "symlink-component":
        (tmp_path / "hostpkg" / "linked").symlink_to(target, target_is_directory=True)
        dest = tmp_path / "hostpkg" / "linked" / "mcore_compat"
    else:
        dest = Path(str(tmp_path / "hostpkg" / "_vendor") + "/../_vendor/mcore_compat")
    before = _snapshot(tmp_path, skip=tmp_path / "nonexistent")
    for args in (["vendor", str(dest)], ["vendor", "--force", str(dest)], ["vendor", "--check", str(dest)]):
        assert main(args) == 3
        assert "refusing DEST" in capsys.readouterr().err
    assert _snapshot(tmp_path, skip=tmp_path / "nonexistent") == before
    with pytest.raises(v.UnsafeDestinationError):
        v.vendor(dest)
    assert issubclass(v.UnsafeDestinationError, compat.CompatError)


def test_symlink_inside_dest_is_not_written_through(vendored, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(vendored / "data")
    (vendored / "data").symlink_to(outside, target_is_directory=True)
    with pytest.raises(v.UnsafeDestinationError, match="symlink"):
        v.vendor(vendored)
    assert list(outside.iterdir()) == []


def test_non_empty_unvendored_dest_needs_force(tmp_path, capsys):
    dest = _host(tmp_path)
    dest.mkdir()
    (dest / "theirs.py").write_text("x = 1\n")
    assert main(["vendor", str(dest)]) == 3
    assert "--force" in capsys.readouterr().err
    assert sorted(p.name for p in dest.iterdir()) == ["theirs.py"]
    assert main(["vendor", "--force", str(dest)]) == 0
    assert (dest / "theirs.py").read_text() == "x = 1\n"
    assert v.check(dest)["extra"] == ["theirs.py"]


def test_missing_parent_is_not_created(tmp_path, capsys):
    assert main(["vendor", str(tmp_path / "nope" / "mcore_compat")]) == 3
    assert "create it first" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_nothing_written_outside_dest(tmp_path, vendored):
    before = _snapshot(tmp_path, skip=vendored)
    assert main(["vendor", str(vendored)]) == 0
    assert main(["vendor", "--check", str(vendored)]) == 0
    (vendored / "resolution.py").write_text("# edited\n")
    assert main(["vendor", "--check", str(vendored)]) == 1
    assert main(["vendor", str(vendored)]) == 0
    assert _snapshot(tmp_path, skip=vendored) == before


def test_revendor_removes_modules_dropped_upstream_only(vendored, capsys):
    retired = b"# a module an older mcore-compat shipped\n"
    manifest = json.loads((vendored / "VENDORED.json").read_text())
    manifest["files"].update({"retired.py": hashlib.sha256(retired).hexdigest(),
                              "mine.py": "0" * 64,  # forged: not the hash of what is there
                              "../outside.py": hashlib.sha256(b"keep").hexdigest()})  # forged: outside DEST
    (vendored / "VENDORED.json").write_text(json.dumps(manifest))
    (vendored / "retired.py").write_bytes(retired)
    (vendored / "mine.py").write_text("my own module\n")
    (vendored.parent / "outside.py").write_text("keep")
    capsys.readouterr()
    assert main(["vendor", str(vendored)]) == 0
    assert not (vendored / "retired.py").exists()  # exactly what vendoring wrote: deleted
    assert (vendored / "mine.py").read_text() == "my own module\n"  # not what vendoring wrote: kept, and said so
    assert "kept mine.py: dropped upstream, but its content is not what vendoring wrote" in capsys.readouterr().out
    assert (vendored.parent / "outside.py").read_text() == "keep"
    report = v.check(vendored)
    assert report["extra"] == ["mine.py"] and report["modified"] == report["missing"] == []


def test_hard_link_out_of_dest_is_replaced_not_written_through(vendored, tmp_path):
    outside = tmp_path / "precious.py"
    outside.write_text("precious\n")
    (vendored / "resolution.py").unlink()
    os.link(outside, vendored / "resolution.py")  # DEST/resolution.py and precious.py are one inode
    assert main(["vendor", str(vendored)]) == 0
    assert outside.read_text() == "precious\n" and outside.stat().st_nlink == 1
    assert (vendored / "resolution.py").read_bytes() == (COMPAT_DIR / "resolution.py").read_bytes()


def test_check_compares_with_the_source_not_the_manifest(vendored, capsys):
    edited = (vendored / "fp32_rule.py").read_bytes() + b"# local patch\n"
    (vendored / "fp32_rule.py").write_bytes(edited)
    manifest = json.loads((vendored / "VENDORED.json").read_text())
    manifest["files"]["fp32_rule.py"] = hashlib.sha256(edited).hexdigest()  # the edit, covered by a rewritten hash
    (vendored / "VENDORED.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["vendor", "--check", str(vendored)]) == 1
    assert "outdated: fp32_rule.py (differs from this package; matches VENDORED.json)" in capsys.readouterr().out
    assert v.check(vendored)["outdated"] == ["fp32_rule.py"]


def test_check_does_not_open_a_fifo_or_follow_a_symlink_inside_dest(vendored, capsys):
    (vendored / "resolution.py").unlink()
    os.mkfifo(vendored / "resolution.py")  # opening it for reading would block forever
    (vendored / "version.py").unlink()
    (vendored / "version.py").symlink_to("/dev/zero")  # reading it would never end
    capsys.readouterr()
    assert main(["vendor", "--check", str(vendored)]) == 1
    assert v.check(vendored)["modified"] == ["resolution.py", "version.py"]


def test_check_prints_hostile_file_names_on_one_line_each(vendored, capsys):
    (vendored / "evil\nclean: every file matches\x1b[31m.py").write_text("")
    capsys.readouterr()
    assert main(["vendor", "--check", str(vendored)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and not any(line.startswith("clean") for line in out.splitlines())
    assert "extra: evil\\nclean: every file matches\\x1b[31m.py (not part of this package)" in out
