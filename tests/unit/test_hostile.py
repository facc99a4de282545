"""Hostile and odd input: one row per attack, run through the real CLI (the surface a user and the weekly gate job
have): in a subprocess where the row checks what only a process shows (peak memory, a broken or missing stdout,
a PYTHON* variable), else in this process through the same entry function; plus the API rows where the CLI is not
the surface.

Every CLI row checks the exit code, that stderr is exactly one line for exit 2/3 (``error: ...`` /
``usage error: ...``), that no traceback or internal error escaped, that no ANSI escape reaches stdout, and a key
phrase. Rows with an ``api`` form also check the exact error class in-process. Bomb rows check the child's own
peak memory (VmHWM at its exit), far below what the bomb would take. Classes: 1 unbounded reads,
3 writes, 6 not a regular file, 7 exit codes, 8 report injection, 9 vendor.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import hostile_inputs as H
import pytest
from extraction_memo import memoized

import compat
from compat import CompatError, VersionError
from compat.errors import InvalidValueError
from compat.registry_format import FORMAT
from compat.tooling import vendor as vendor_module
from compat.tooling.archive import (
    MAX_ARCHIVE_BYTES,
    MAX_MEMBER_BYTES,
    MAX_METADATA_BYTES,
    MAX_TAR_HEADER_BYTES,
    MAX_TAR_HEADERS_TOTAL,
    MAX_TAR_STREAM_BYTES,
    CandidateError,
    open_source,
)
from compat.tooling.extract import DDP_PATH
from compat.tooling.gate.accept_pin import ReplaceRefusedError
from compat.tooling.gate.registry_file import RegistryFileError, read_registry
from compat.tooling.vendor import VendorError

COMPAT_DATA = H.ROOT / "compat" / "data"
OFFLINE = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "UV_INDEX_URL": "http://127.0.0.1:9/simple",
           "MCORE_COMPAT_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_DEFAULT_TIMEOUT": "1", "PIP_RETRIES": "0",
           "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": "", "PIP_CONFIG_FILE": os.devnull}
MATRIX = 'pins:\n  - version: "0.19.2"\n    python: "3.12"\n    torch: "2.13.0+cpu"\n'
BOMB_RSS_MIB = 400  # a bomb that was inflated would take 1 GiB; the gate itself peaks near 40 MiB


@dataclass
class Attack:
    klass: int  # the class of bounded input
    build: Callable[[Path], dict] | None  # makes the inputs under tmp; returns run_cli kwargs (args, cwd, env,
    #                                       stdout); None: an API-only row (no CLI surface)
    code: int | None  # expected exit code; 3 = a CompatError in one line, 2 = usage, 1 = drift / review, 0 = ok
    phrase: str  # in stderr for 2/3, in stdout otherwise, in the exception for an API-only row
    api: Callable[[Path], object] | None = None  # the same attack in-process: must raise ``error``
    error: type[Exception] | None = None
    after: Callable[[Path, H.Run], None] | None = None  # further checks (files unchanged, output structure)
    max_rss_mib: float | None = None
    without_megatron: bool = False  # reads package_info.py, which an installed megatron-core's metadata pre-empts


def cli(*args, **kw) -> dict:
    return {"args": list(args), **kw}


# ------------------------------------------------------------------------------------ builders
def _registry_copy(tmp: Path) -> Path:
    path = tmp / "registry.json"
    shutil.copyfile(COMPAT_DATA / "registry.json", path)
    return path


def _matrix(tmp: Path) -> Path:
    path = tmp / "matrix.yaml"
    path.write_text(MATRIX)
    return path


def _put(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def _registry_with(tmp: Path, text: str) -> Path:
    return _put(tmp, "registry.json", text.encode())


def _registry_edit(edit) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        data = json.loads((COMPAT_DATA / "registry.json").read_text())
        edit(data)
        return _registry_with(tmp, json.dumps(data))
    return build


def _gate_registry(make) -> Callable[[Path], dict]:
    def build(tmp: Path) -> dict:
        wheel = H.wheel(tmp / "megatron_core-0.19.2-py3-none-any.whl")
        return cli("gate", wheel, "--registry", make(tmp))
    return build


def _wheel_bytes(entries) -> Callable[[Path], dict]:
    return lambda tmp: cli("gate", _put(tmp, "megatron_core-0.20.0-py3-none-any.whl", H.raw_zip(entries())))


def _sdist(data: Callable[[], bytes]) -> Callable[[Path], dict]:
    return lambda tmp: cli("gate", _put(tmp, "megatron_core-0.20.0.tar.gz", data()))


def _metadata_bomb(claimed: int) -> list[dict]:
    bomb = H.deflate_zeros(1024)  # 1 GiB of zeros in 1 MB
    return [{"name": "megatron_core-0.20.0.dist-info/METADATA", "data": bomb, "method": 8, "file_size": claimed},
            *H.honest_wheel_entries()[1:]]


def _config_bomb(claimed: int) -> list[dict]:
    bomb = H.deflate_zeros(1024, prefix=H.config_source().encode())
    entries = H.honest_wheel_entries()
    return [entries[0], {"name": DDP_PATH, "data": bomb, "method": 8, "file_size": claimed}, entries[2]]


def _tar_stream_bomb() -> bytes:
    """A gzip'd tar whose first member is 1 GiB of zeros (1 MB on disk); the config files follow it."""
    header = H.tar_header("megatron_core-0.20.0/zeros.bin", 1 << 30)
    stream = H.deflate_zeros(1024, prefix=header)
    return H.gzip_of_deflate(stream[:-2] + _deflate_piece(H.sdist_bytes(H.sdist_members("0.20.0"))) + stream[-2:])


def _deflate_piece(data: bytes) -> bytes:
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush(zlib.Z_FULL_FLUSH)


def _pax_header_bomb() -> bytes:
    """A pax extended header that claims 1 GiB: tarfile reads a pax record whole, before the member it describes."""
    return H.gzip_of_deflate(H.deflate_zeros(1024, prefix=H.tar_header("././@PaxHeader", 1 << 30, tarfile.XHDTYPE)))


def _pax_global_headers() -> bytes:
    """Pax global headers of just under 1 MiB each, with distinct keys: each one alone is within its cap, and
    tarfile merges them all into one dict."""
    blocks = []
    for i in range(24):
        info = tarfile.TarInfo("pax_global_header")
        info.type = tarfile.XGLTYPE
        info.pax_headers = {f"k{i}.{j}": "v" * 1000 for j in range(1000)}
        blocks.append(info.tobuf(format=tarfile.PAX_FORMAT))
    return H.gzip_of_deflate(_deflate_piece(b"".join(blocks) + H.sdist_bytes(H.sdist_members("0.20.0")))
                             + b"\x03\x00")


def _gnu_longname_bomb() -> bytes:
    header = H.tar_header("././@LongLink", 1 << 30, tarfile.GNUTYPE_LONGNAME)
    return H.gzip_of_deflate(H.deflate_zeros(1024, prefix=header))


def _many_tar_members() -> bytes:
    """50,001 members (one directory header repeated: a repeated name still counts; a repeated regular file is
    refused as a duplicate) before the config files."""
    return (H.tar_header("megatron_core-0.20.0/empty", 0, tarfile.DIRTYPE) * 50_001
            + H.sdist_bytes(H.sdist_members("0.20.0")))


def _xz_huge_dictionary() -> bytes:
    return H.xz_demanding_dictionary(H.sdist_bytes(H.sdist_members("0.20.0")))


def _tree_with(mutate) -> Callable[[Path], dict]:
    def build(tmp: Path) -> dict:
        root = H.tree(tmp / "Megatron-LM")
        mutate(tmp, root)
        return cli("gate", root)
    return build


def _symlink_dir_out(tmp: Path, folder: Path) -> None:
    shutil.move(folder, tmp / "elsewhere")
    folder.symlink_to(tmp / "elsewhere", target_is_directory=True)


def _replace_config(tmp: Path, root: Path, make) -> None:
    path = root / DDP_PATH
    path.unlink()
    make(tmp, path)


def _symlink_out(tmp: Path, path: Path) -> None:
    outside = tmp / "outside.py"
    outside.write_text(H.config_source())
    path.symlink_to(outside)


def _package_info(body: bytes | None = None, make=None) -> Callable[[Path], dict]:
    """A working directory holding megatron/core/package_info.py; explain without --mcore reads it."""
    def build(tmp: Path) -> dict:
        info = tmp / "megatron" / "core" / "package_info.py"
        info.parent.mkdir(parents=True)
        if make:
            make(info)
        else:
            info.write_bytes(body)
        # as a user runs it there: the working directory first on sys.path (the unit session sets PYTHONSAFEPATH)
        return cli("explain", cwd=tmp, env={"PYTHONSAFEPATH": ""})
    return build


def _vendored(tmp: Path) -> Path:
    for pkg in ("host", "host/_vendor"):
        (tmp / pkg).mkdir(parents=True, exist_ok=True)
        (tmp / pkg / "__init__.py").write_text("")
    dest = tmp / "host" / "_vendor" / "mc"
    from compat.tooling.vendor import vendor
    vendor(dest)
    return dest


def _manifest_edit(dest: Path, edit) -> None:
    manifest = json.loads((dest / "VENDORED.json").read_text())
    edit(manifest)
    (dest / "VENDORED.json").write_text(json.dumps(manifest))


def _accept(version: str, *, extra: str = "", replace: bool = False, change_default: bool = False,
            matrix=None) -> Callable[[Path], dict]:
    def build(tmp: Path) -> dict:
        ddp = H.config_source(extra=extra)
        if change_default:
            assert ddp.count("grad_reduce_in_fp32: bool = False") == 1
            ddp = ddp.replace("grad_reduce_in_fp32: bool = False", "grad_reduce_in_fp32: bool = True")
        wheel = H.wheel(tmp / f"megatron_core-{version}-py3-none-any.whl", version=version, ddp=ddp)
        reg, mat = _registry_copy(tmp), (matrix or _matrix)(tmp)
        (tmp / "before").mkdir()
        for path in (reg, mat):
            if path.is_file():  # not the FIFO rows
                shutil.copyfile(path, tmp / "before" / path.name)
        return cli("gate", wheel, "--registry", reg, "--matrix", mat, "--accept", *(["--replace"] if replace else []))
    return build


def _accept_in_process(tmp: Path):
    from compat.tooling.gate import accept, gate, load_registry

    args = _accept("0.19.2", change_default=True)(tmp)["args"]
    report = gate(args[1], load_registry(args[3]))
    return accept(report, args[3], pin=H_matrix().MatrixTools.pinner(args[5], args[3]))


def _accept_args(tmp: Path) -> list:
    wheel = next(tmp.glob("*.whl"))
    return ["gate", wheel, "--registry", tmp / "registry.json", "--accept"]


def _unchanged(tmp: Path, run: H.Run) -> None:
    for name in ("registry.json", "matrix.yaml"):
        if (tmp / name).is_file() and not (tmp / name).is_fifo():
            assert (tmp / name).read_bytes() == (tmp / "before" / name).read_bytes(), f"{name} was changed"
    assert not [p.name for p in tmp.iterdir() if p.name.endswith(".tmp")], "a temp file was left behind"


def _injection_wheel(tmp: Path) -> dict:
    """A candidate whose file name, METADATA and field docs/annotations/defaults carry markdown, ANSI, newlines."""
    evil = "\n## Accepted\n- registry: added megatron-core 6.6.6 `x` \x1b[31mRED\x1b[0m"
    extra = f"evil_field: {'```' + evil!r} = {'`` ' + evil!r}\n{' pwned ' + evil!r}\n"
    docs = {"bucket_size": "Doc changed. ``` \x1b[2J ## Accepted <img src=x onerror=alert(1)> [click](http://x)"}
    meta = H.metadata("0.20.0\x1b[31m", requires_python=">=3.12 `\x1b[0m <b>",
                      extra="Summary: x\n ## Accepted\n")
    name = "megatron_core-0.20.0-py3-none-any\n## Accepted\n`x`\x1b[31m.whl"
    wheel = H.wheel(tmp / name, version="0.20.0", ddp=H.config_source(extra=extra, docs=docs), meta=meta)
    return cli("gate", wheel)


EVIL = "\n## Accepted\n- registry: added megatron-core 6.6.6 `x` \x1b[31mRED\x1b[0m <b>[l](http://x)</b> *b* _i_"


def _evil_candidate(*, name: str = "megatron_core-0.20.0-py3-none-any.whl", version: str = "0.20.0",
                    requires_python: str = ">=3.12", extra: str = "", docs=None, accept: bool = False):
    """A gate run on a wheel carrying EVIL in one place (its file name, METADATA, a field's doc, annotation...)."""
    def build(tmp: Path) -> dict:
        meta = H.metadata(version, requires_python=requires_python)
        wheel = H.wheel(tmp / name, version=version, meta=meta, ddp=H.config_source(extra=extra, docs=docs))
        args = ["gate", wheel]
        if accept:
            args += ["--registry", _registry_copy(tmp), "--matrix", _matrix(tmp), "--accept"]
        return cli(*args)
    return build


def _report_is_structured(tmp: Path, run: H.Run) -> None:
    lines = run.stdout.splitlines()
    accepted = ["## Accepted"] if "## Accepted" in lines else []
    checkpoints = ["## Checkpoints"] if "## Checkpoints" in lines else []  # the lane's verdict, when it has one
    install = ["## Install"] if "## Install" in lines else []  # the plain install of the pin before, when recorded
    training = ["## Training"] if "## Training" in lines else []  # the equivalence lane's, likewise
    assert [line for line in lines if line.startswith("#")] == [
        lines[0], "## Breaking", "## Needs a decision", "## Informational", *install, "## Companions",
        *checkpoints, *training,
        *accepted], \
        "a heading was forged"
    if accepted:
        assert lines.index("## Accepted") > lines.index("## Informational") and len(accepted) == 1
    assert lines[0].startswith("# Upgrade gate: megatron-core ")
    assert all(line == "" or line.startswith(("#", "- ", "  - ", "    ", "_none_")) for line in lines), \
        "a line escaped its list item"
    assert not [line for line in lines if _dangling_backticks(line)], "a backtick run opens a span it never closes"
    prose = "\n".join(_outside_code_spans(line) for line in lines)
    for markup in (r"<[A-Za-z/!?]", r"\]\(", r"\[", r"\*\w", r"(?<!\w)_\w"):  # HTML, links, emphasis
        assert not re.search(r"(?<!\\)" + markup, prose), (markup, re.search(r"(?<!\\)" + markup, prose))


def _outside_code_spans(line: str) -> str:
    """The line without its code spans (whose content markdown shows literally) and without our own bold labels."""
    out, i = [], 0
    for m in re.finditer(r"(?<!\\)`+", line):
        if m.start() < i:
            continue
        close = re.compile(r"(?<!`)" + "`" * len(m.group()) + r"(?!`)").search(line, m.end())
        if close:
            out.append(line[i:m.start()])
            i = close.end()
    out.append(line[i:])
    return re.sub(r"\*\*[^*]+\*\*", "", "".join(out)).replace("_none_", "")


def _dangling_backticks(line: str) -> bool:
    """True if an unescaped backtick run has no run of the same length after it on the line (CommonMark code
    spans): candidate text that leaked out of its code span, or into a sentence, shows up as such a run."""
    runs = [len(m.group()) for m in re.finditer(r"(?<!\\)`+", line)]
    while runs:
        opener = runs.pop(0)
        if opener not in runs:
            return True
        runs = runs[runs.index(opener) + 1:]
    return False


def _closed_pipe(tmp: Path) -> dict:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write is EPIPE
    return cli("fields", "--mcore", "0.19.2", stdout=write_end)


def _dev_full(tmp: Path) -> dict:
    return cli("fields", "--mcore", "0.19.2", stdout=os.open("/dev/full", os.O_WRONLY))


def _closed_stdout(tmp: Path) -> dict:
    return {"args": ["fields", "--mcore", "0.19.2"], "stdout": -1}


# ------------------------------------------------------------------------------------ hostile-input builders
def _from_file(make: Callable[[Path], Path], *extra: str) -> Callable[[Path], dict]:
    return lambda tmp: cli("explain", "--from", make(tmp), *extra)


def _json_file(text: str) -> Callable[[Path], Path]:
    return lambda tmp: _put(tmp, "overrides.json", text.encode())


def _dense_source() -> str:
    """About 1.6 MiB (under the byte cap) of one-character statements: over the token cap."""
    return "a;" * 800_000 + "\n"


def _wheel_with_ddp(ddp: str, version: str = "0.20.0") -> Callable[[Path], dict]:
    return lambda tmp: cli("gate", H.wheel(tmp / f"megatron_core-{version}-py3-none-any.whl", version=version, ddp=ddp))


def _three_dense_config_files(tmp: Path) -> dict:
    """Every config file the gate parses, each padded to just under the per-file token cap (the gate's most
    parsing for one candidate)."""
    from compat.tooling.pysource import MAX_FILE_TOKENS

    pad = "\n" + "a;" * (MAX_FILE_TOKENS // 2 - 30_000) + "\n"
    transformer = "megatron/core/transformer/transformer_config.py"
    return cli("gate", H.wheel(tmp / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0",
                               ddp=H.config_source() + pad, optimizer=H.config_source(optimizer=True) + pad,
                               members={transformer: pad}))


def _sdist_with(members: Callable[[], list]) -> Callable[[Path], dict]:
    return _sdist(lambda: H.sdist_bytes(members()))


def _same_registry_and_matrix(tmp: Path) -> dict:
    reg = _registry_copy(tmp)
    return cli("gate", H.wheel(tmp / "w.whl", version="0.20.0"), "--accept", "--registry", reg, "--matrix", reg)


def _registry_unchanged(tmp: Path, run: H.Run) -> None:
    assert (tmp / "registry.json").read_bytes() == (COMPAT_DATA / "registry.json").read_bytes()


def _blanks_key(tmp: Path) -> dict:
    return cli("explain", "--set", "a" + " " * 100_000 + "b=1")

# ------------------------------------------------------------------------------------ the catalogue
CATALOGUE: dict[str, Attack] = {
    # ---- 1. unbounded reads
    "zip-bomb-metadata-honest-header": Attack(
        1, _wheel_bytes(lambda: _metadata_bomb(1 << 30)), 3, f"over the {MAX_METADATA_BYTES}-byte cap",
        max_rss_mib=BOMB_RSS_MIB),
    "zip-bomb-metadata-header-lies-small": Attack(
        1, _wheel_bytes(lambda: _metadata_bomb(1000)), 3, "Bad CRC-32", max_rss_mib=BOMB_RSS_MIB),
    "zip-bomb-config-header-lies-small": Attack(
        1, _wheel_bytes(lambda: _config_bomb(100_000)), 3, "Bad CRC-32", max_rss_mib=BOMB_RSS_MIB),
    "zip-member-over-cap": Attack(
        1, _wheel_bytes(lambda: [*H.honest_wheel_entries()[:1],
                                 H.zip_entry(DDP_PATH, bytes(MAX_MEMBER_BYTES + 1))]),
        3, f"over the {MAX_MEMBER_BYTES}-byte cap"),
    "zip-directory-claims-many-members": Attack(
        1, _wheel_bytes(lambda: [{**H.honest_wheel_entries()[0], "eocd_entries": 60_000}]),
        3, "lists 60000 members"),
    "zip-directory-claims-huge-size": Attack(
        1, _wheel_bytes(lambda: [{**H.honest_wheel_entries()[0], "eocd_size": 1 << 30}]), 3, "directory"),
    "zip-encrypted-member": Attack(
        1, _wheel_bytes(lambda: [H.honest_wheel_entries()[0], {**H.honest_wheel_entries()[1], "flags": 1}]),
        3, "is encrypted"),
    "tar-stream-bomb": Attack(
        1, _sdist(_tar_stream_bomb), 3, f"unpacks past the {MAX_TAR_STREAM_BYTES}-byte cap",
        max_rss_mib=BOMB_RSS_MIB),
    "tar-pax-header-bomb": Attack(
        1, _sdist(_pax_header_bomb), 3, f"claims 1073741824 bytes, over the {MAX_TAR_HEADER_BYTES}-byte cap",
        max_rss_mib=BOMB_RSS_MIB),
    "tar-gnu-longname-bomb": Attack(
        1, _sdist(_gnu_longname_bomb), 3, f"over the {MAX_TAR_HEADER_BYTES}-byte cap", max_rss_mib=BOMB_RSS_MIB),
    "tar-pax-global-headers-add-up": Attack(1, _sdist(_pax_global_headers), 3,
                                            f"add up to over the {MAX_TAR_HEADERS_TOTAL}-byte cap",
                                            max_rss_mib=BOMB_RSS_MIB),
    "tar-gnu-sparse-extension-chain": Attack(1, _sdist(H.gnu_sparse_bomb), 3, "sparse members are not read",
                                             max_rss_mib=BOMB_RSS_MIB),
    "tar-pax-sparse-map-of-a-billion-numbers": Attack(
        1, _sdist(H.pax_sparse_map_bomb), 3, "'megatron_core-0.20.0/sparse' is a sparse file",
        max_rss_mib=BOMB_RSS_MIB),
    "tar-extended-headers-within-caps": Attack(
        1, _sdist(lambda: H.sdist_bytes([H.tar_member("megatron_core-0.20.0/" + "d" * 300 + "/x", b"x"),
                                         *H.sdist_members("0.20.0")])), 0, "COMPATIBLE"),
    "tar-many-members": Attack(1, _sdist(_many_tar_members), 3, "has over 50000 members"),
    "tar-xz-asks-for-a-4-gib-dictionary": Attack(1, _sdist(_xz_huge_dictionary), 3, "Memory usage limit"),
    "candidate-over-cap": Attack(
        1, lambda tmp: cli("gate", H.sparse(tmp / "megatron_core-0.20.0-py3-none-any.whl", MAX_ARCHIVE_BYTES + 1)),
        3, f"over the {MAX_ARCHIVE_BYTES}-byte read cap"),
    "tree-config-over-cap": Attack(
        1, _tree_with(lambda tmp, root: H.sparse(root / DDP_PATH, MAX_MEMBER_BYTES + 1)), 3,
        f"over the {MAX_MEMBER_BYTES}-byte read cap"),
    "tree-config-symlink-out-of-tree": Attack(
        1, _tree_with(lambda tmp, root: _replace_config(tmp, root, _symlink_out)), 3, "is a symlink"),
    "tree-config-symlink-to-dev-zero": Attack(
        1, _tree_with(lambda tmp, root: _replace_config(tmp, root, lambda t, p: p.symlink_to("/dev/zero"))), 3,
        "is a symlink"),
    "tree-source-path-with-dotdot": Attack(
        1, None, None, "leaves the tree or is a symlink",
        api=lambda tmp: open_source(H.tree(tmp / "t")).read("megatron/../../etc/passwd"), error=CandidateError),
    "tree-directory-symlink-out-of-tree": Attack(
        1, _tree_with(lambda tmp, root: _symlink_dir_out(tmp, root / "megatron/core/distributed")), 3,
        "leaves the tree or is a symlink"),
    "registry-over-cap": Attack(1, _gate_registry(lambda tmp: H.sparse(tmp / "registry.json", 33 << 20)), 3,
                                "over the 33554432-byte read cap"),
    "package-info-over-cap": Attack(1, _package_info(make=lambda p: H.sparse(p, 2 << 20)), 3,
                                    "over the 1048576-byte read cap", without_megatron=True),
    "vendored-manifest-over-cap": Attack(
        1, lambda tmp: cli("vendor", "--check", (lambda d: (H.sparse(d / "VENDORED.json", 2 << 20), d)[1])(
            _vendored(tmp))), 3, "over the 1048576-byte read cap"),
    "matrix-over-cap": Attack(1, _accept("0.20.0", matrix=lambda tmp: H.sparse(tmp / "matrix.yaml", 2 << 20)), 3,
                              "matrix.yaml not updated", after=_unchanged),

    # ---- 3. writes
    "accept-existing-version-refused": Attack(3, _accept("0.19.2", change_default=True), 3, "pass --replace",
                                              after=_unchanged, api=lambda tmp: _accept_in_process(tmp),
                                              error=ReplaceRefusedError),
    "accept-existing-version-replaced": Attack(
        3, _accept("0.19.2", change_default=True, replace=True), 0, "megatron-core 0.19.2 replaced",
        after=lambda tmp, run: _replaced(tmp)),
    "accept-new-version": Attack(3, _accept("0.20.0"), 0, "megatron-core 0.20.0 added",
                                 after=lambda tmp, run: _pinned(tmp, "0.20.0")),
    # a bare 1e999 is kept as its expression text (default_expr); inside a literal it is a value JSON cannot hold
    "accept-non-finite-default": Attack(3, _accept("0.20.0", extra="huge: tuple = (1e999, 1.0)"), 3,
                                        "DistributedDataParallelConfig.huge: non-finite default [inf, 1.0]",
                                        after=_unchanged),
    "accept-same-version-spelled-differently-refused": Attack(
        3, _accept("0.19.2.0", change_default=True), 3, "already holds megatron-core 0.19.2", after=_unchanged),
    "accept-same-version-spelled-differently-replaced": Attack(
        3, _accept("0.19.2.0", change_default=True, replace=True), 0, "megatron-core 0.19.2 replaced",
        after=lambda tmp, run: _replaced(tmp)),
    "accept-lone-surrogate-in-doc": Attack(
        3, _accept("0.20.0", extra="odd: int = 0\n'\\ud800 a doc with a lone surrogate'"), 3,
        "DistributedDataParallelConfig.odd: its doc holds a lone surrogate", after=_unchanged),
    "accept-empty-matrix-path": Attack(
        3, lambda tmp: {**_accept("0.20.0")(tmp), "args": [*_accept_args(tmp), "--matrix", ""]}, 3,
        "is a directory, not a file", after=_unchanged),
    "registry-with-infinity": Attack(3, _gate_registry(lambda tmp: _registry_with(
        tmp, (COMPAT_DATA / "registry.json").read_text().replace('"default": false', '"default": Infinity', 1))),
        3, "Infinity is not JSON", api=lambda tmp: read_registry(_registry_with(tmp, '{"a": NaN}')),
        error=RegistryFileError),

    # ---- 6. not a regular file
    "candidate-fifo": Attack(6, lambda tmp: cli("gate", H.fifo(tmp / "megatron_core-0.20.0-py3-none-any.whl")), 3,
                             "is not a regular file (a FIFO, device or socket)",
                             api=lambda tmp: open_source(H.fifo(tmp / "c.whl")), error=CandidateError),
    "candidate-dev-zero": Attack(6, lambda tmp: cli("gate", "/dev/zero"), 3, "is not a regular file"),
    "candidate-directory-without-megatron": Attack(6, lambda tmp: cli("gate", tmp), 3,
                                                   "has no megatron/core/distributed"),
    "tree-config-is-fifo": Attack(
        6, _tree_with(lambda tmp, root: _replace_config(tmp, root, lambda t, p: H.fifo(p))), 3,
        "is not a regular file"),
    "registry-fifo": Attack(6, _gate_registry(lambda tmp: H.fifo(tmp / "registry.json")), 3, "not a regular file"),
    "registry-dev-zero": Attack(6, _gate_registry(lambda tmp: Path("/dev/zero")), 3, "not a regular file"),
    "registry-directory": Attack(6, _gate_registry(lambda tmp: tmp), 3, "not a regular file (a directory)"),
    "vendor-dest-fifo": Attack(6, lambda tmp: cli("vendor", H.fifo(tmp / "dest")), 3, "is not a directory"),
    "vendor-check-dest-dev-zero": Attack(6, lambda tmp: cli("vendor", "--check", "/dev/zero"), 3,
                                         "is not a vendored copy"),
    "vendor-manifest-fifo": Attack(
        6, lambda tmp: cli("vendor", "--check", _fifo_manifest(_vendored(tmp))), 3, "not a regular file"),
    "package-info-fifo": Attack(6, _package_info(make=H.fifo), 3, "not a regular file", without_megatron=True),
    "matrix-fifo": Attack(6, _accept("0.20.0", matrix=lambda tmp: H.fifo(tmp / "matrix.yaml")), 3,
                          "not a regular file", after=_unchanged),
    "latest-keyword-wins-over-directory": Attack(
        6, lambda tmp: cli("gate", "latest", cwd=H.tree(tmp / "latest").parent,
                           env={**OFFLINE, "MCORE_COMPAT_CACHE": str(tmp / "cache")}), 3, "127.0.0.1"),
    "spec-keyword-wins-over-file": Attack(
        6, lambda tmp: cli("gate", "megatron-core==0.99.0", cwd=_put(tmp, "megatron-core==0.99.0", b"").parent,
                           env={**OFFLINE, "MCORE_COMPAT_CACHE": str(tmp / "cache")}), 3, "127.0.0.1"),
    "registry-empty-path": Attack(6, _gate_registry(lambda tmp: ""), 3, "not a regular file (a directory)"),
    "latest-directory-as-dot-slash-path": Attack(
        6, lambda tmp: cli("gate", "./latest", "--against", "0.19.2", cwd=H.tree(tmp / "latest").parent, env=OFFLINE),
        0, "COMPATIBLE"),

    # ---- 7. exit codes: one line, no traceback
    "candidate-name-300-chars": Attack(7, lambda tmp: cli("gate", "x" * 300), 3, "does not exist"),
    "candidate-name-with-newlines": Attack(7, lambda tmp: cli("gate", "a\nb\n## c"), 3, "does not exist"),
    "candidate-corrupt-file-with-newline-in-name": Attack(
        7, lambda tmp: cli("gate", _put(tmp, "bad\nname.whl", b"PK\x03\x04 junk")), 3, "not a readable wheel"),
    "registry-not-json": Attack(7, _gate_registry(lambda tmp: _registry_with(tmp, "{nope")), 3, "not valid JSON"),
    "registry-not-an-object": Attack(7, _gate_registry(lambda tmp: _registry_with(tmp, "[]")), 3,
                                     "expected an object"),
    "registry-release-not-an-object": Attack(7, _gate_registry(lambda tmp: _registry_with(
        tmp, json.dumps({"format": FORMAT, "releases": [1], "snapshots": {}, "fields": [], "checks": [], "writes": []}))), 3,
        "releases[0]"),
    "registry-no-releases": Attack(7, _gate_registry(_registry_edit(lambda d: d.update(releases=[]))), 3,
                                   "expected a non-empty list"),
    "registry-all-yanked": Attack(7, _gate_registry(_registry_edit(
        lambda d: [r.update(yanked=True) for r in d["releases"]])), 3, "every release is yanked"),
    "registry-dangling-snapshot": Attack(7, _gate_registry(_registry_edit(
        lambda d: d["releases"][-1]["configs"].update(ddp="ddp@9.9.9"))), 3, "releases[25].configs.ddp"),
    "registry-bad-version": Attack(7, _gate_registry(_registry_edit(
        lambda d: d["releases"][-1].update(version="9" * 5000))), 3, "longer than 128 characters"),
    "registry-field-without-annotation": Attack(7, _gate_registry(_registry_edit(
        lambda d: d["fields"][0].pop("annotation"))), 3, "fields[0].annotation"),
    "registry-duplicate-key": Attack(7, _gate_registry(lambda tmp: _registry_with(
        tmp, '{"releases": [], "releases": []}')), 3, "duplicate key"),
    "registry-nested-100k-deep": Attack(7, _gate_registry(lambda tmp: _registry_with(
        tmp, "[" * 100_000 + "]" * 100_000)), 3, "not valid JSON"),
    "registry-missing": Attack(7, _gate_registry(lambda tmp: tmp / "nope.json"), 3, "No such file"),
    "mcore-5000-digits": Attack(7, lambda tmp: cli("explain", "--mcore", "9" * 5000), 3,
                                "longer than 128 characters",
                                api=lambda tmp: compat.ddp_kwargs({}, None, "9" * 5000),
                                error=VersionError),
    "mcore-5000-digit-segment": Attack(7, lambda tmp: cli("fields", "--mcore", "0." + "1" * 5000), 3,
                                       "longer than 128 characters"),
    "mcore-with-newline": Attack(7, lambda tmp: cli("explain", "--mcore", "0.19\n## 2"), 3, "does not parse"),
    "against-5000-digits": Attack(7, lambda tmp: cli("gate", H.wheel(tmp / "w.whl"), "--against", "1" * 5000), 2,
                                  "longer than 128 characters", after=lambda tmp, run: _short_stderr(run)),
    "spec-5000-digits": Attack(7, lambda tmp: cli("gate", "megatron-core==" + "1" * 5000), 2,
                               "longer than 128 characters"),
    "replace-without-accept": Attack(7, lambda tmp: cli("gate", H.wheel(tmp / "w.whl"), "--replace"), 2,
                                     "--replace only applies with --accept"),
    "package-info-syntax-error": Attack(7, _package_info(b"MAJOR = (\n"), 3,
                                        "cannot read the megatron-core version from", without_megatron=True),
    "package-info-null-bytes": Attack(7, _package_info(b"MAJOR = 0\x00\n"), 3,
                                      "cannot read the megatron-core version from", without_megatron=True),
    "package-info-5000-digit-major": Attack(
        7, _package_info(b"MAJOR = " + b"9" * 5000 + b"\nMINOR = 1\nPATCH = 0\n"), 3,
        "cannot read the megatron-core version from", without_megatron=True),
    "package-info-deeply-nested": Attack(
        7, _package_info(b"MAJOR = " + b"(" * 100_000 + b")" * 100_000 + b"\n"), 3,
        "cannot read the megatron-core version from", without_megatron=True),
    "vendored-manifest-is-a-directory-force": Attack(
        7, lambda tmp: cli("vendor", "--force", _manifest_dir(tmp)), 3, "cannot write"),
    "vendored-manifest-not-json": Attack(
        7, lambda tmp: cli("vendor", "--check", _bad_manifest(_vendored(tmp))), 3, "unreadable VENDORED.json",
        api=lambda tmp: vendor_module.check(_bad_manifest(_vendored(tmp))), error=VendorError),
    "vendor-dest-name-too-long": Attack(7, lambda tmp: cli("vendor", tmp / ("d" * 300)), 3, "cannot access"),
    "set-json-nested-100k-deep": Attack(7, lambda tmp: cli("explain", "--set", "bucket_size=" + "[" * 60_000), 3,
                                        "too deeply nested"),
    "stdout-broken-pipe": Attack(7, _closed_pipe, 3, "broken pipe"),
    "stdout-full-disk": Attack(7, _dev_full, 3, "cannot write to stdout: No space left on device"),
    "stdout-closed": Attack(7, _closed_stdout, 3, "stdout is closed"),
    "ascii-terminal-report": Attack(7, lambda tmp: {**_injection_wheel(tmp), "env": {"PYTHONIOENCODING": "ascii"}},
                                    1, "Upgrade gate"),

    # ---- 8. report injection
    "report-injection-name-metadata-docs": Attack(8, _injection_wheel, 1, "\\x1b[31m", after=_report_is_structured),
    "report-injection-file-name": Attack(8, _evil_candidate(name=f"megatron_core-0.20.0{EVIL}.whl".replace("/", "|")),
                                         0, "\\x1b[31mRED", after=_report_is_structured),
    # a METADATA header spans lines only as a folded continuation (a newline then a space)
    "report-injection-metadata-version": Attack(8, _evil_candidate(version="0.20.0" + EVIL.replace("\n", "\n ")), 0,
                                                "\\x1b\\[31mRED", after=_report_is_structured),
    # exit 1: the gate diffs Requires-Python, and one that is not a specifier set needs a decision
    "report-injection-requires-python": Attack(8, _evil_candidate(requires_python=">=3.12" + EVIL.replace("\n", "\n ")), 1,
                                               "Requires-Python >=3.12", after=_report_is_structured),
    "report-injection-added-field-doc": Attack(8, _evil_candidate(extra=f"evil: int = 0\n{EVIL!r}"), 1,
                                               "\\x1b\\[31mRED", after=_report_is_structured),
    "report-injection-changed-doc": Attack(8, _evil_candidate(docs={"bucket_size": f"```{EVIL}"}), 0,
                                           "**doc changed** `bucket_size`", after=_report_is_structured),
    "report-injection-annotation-and-default": Attack(
        8, _evil_candidate(extra=f"evil: {'```' + EVIL!r} = {'`` ' + EVIL!r}"), 1, "**added** `evil`",
        after=_report_is_structured),
    "report-injection-accepted-section": Attack(
        8, _evil_candidate(name=f"megatron_core-0.20.0{EVIL}.whl".replace("/", "|"), accept=True), 0,
        "megatron-core 0.20.0 added", after=_report_is_structured),
    "vendor-check-output-with-forged-file-name": Attack(
        8, lambda tmp: cli("vendor", "--check", _evil_file(_vendored(tmp))), 1, "extra: evil\\n## Accepted",
        after=lambda tmp, run: _one_line_per_file(run)),
    "report-lone-surrogate-and-bidi-in-doc": Attack(
        8, lambda tmp: cli("gate", H.wheel(tmp / "w.whl", version="0.20.0", ddp=H.config_source(
            extra="odd: int = 0\n'\\ud800 \\u202egnp.exe \\u200b hidden'"))), 1, "\\u202egnp.exe",
        after=_report_is_structured),
    "report-json-non-finite-default": Attack(
        8, lambda tmp: cli("gate", H.wheel(tmp / "w.whl", version="0.20.0",
                                           ddp=H.config_source(extra="huge: float = 1e999")), "--json"),
        1, '"candidate": "0.20.0"', after=lambda tmp, run: json.loads(run.stdout, parse_constant=_no_constant)),

    # ---- 9. vendor
    "vendor-hard-link-out-of-dest": Attack(9, lambda tmp: cli("vendor", _hard_linked(tmp)), 0, "vendored",
                                           after=lambda tmp, run: _outside_intact(tmp)),
    "vendor-forged-manifest-deletes-user-file": Attack(
        9, lambda tmp: cli("vendor", _forged_delete(tmp)), 0, "kept mine.py",
        after=lambda tmp, run: _user_files_intact(tmp)),
    "vendor-check-edit-with-rewritten-hash": Attack(9, lambda tmp: cli("vendor", "--check", _edit_and_rehash(tmp)),
                                                   1, "outdated: fp32_rule.py"),
    "vendor-check-fifo-inside-dest": Attack(9, lambda tmp: cli("vendor", "--check", _fifo_inside(_vendored(tmp))),
                                            1, "modified: resolution.py"),
    "vendor-symlinked-data-dir": Attack(9, lambda tmp: cli("vendor", _symlinked_data(tmp)), 3,
                                        "refusing to write through symlink",
                                        after=lambda tmp, run: _nothing_outside(tmp)),

    # ---- bounded parsing, explain --from, archives read as installed, one-line errors
    "r2-source-member-over-parse-cap": Attack(
        1, _wheel_with_ddp("x = 1\n" * 1_300_000), 3, "over the 2097152-byte cap on one parsed source file",
        max_rss_mib=BOMB_RSS_MIB),
    "r2-dense-source-under-byte-cap": Attack(
        1, _wheel_with_ddp(_dense_source()), 3, "over the cap on one parsed source file", max_rss_mib=BOMB_RSS_MIB),
    "r2-five-nested-powers-in-a-default": Attack(
        1, _wheel_with_ddp(H.config_source(extra="big: int = ((((2**64)**64)**64)**64)**64")), 1,
        "((((2 ** 64) ** 64) ** 64) ** 64) ** 64", max_rss_mib=BOMB_RSS_MIB),
    "r2-hex-default-past-the-digit-limit": Attack(
        7, _wheel_with_ddp(H.config_source(extra="big: int = 0x" + "f" * 4000)), 3, "int-to-str digit limit"),
    "r2-default-expression-over-cap": Attack(
        1, _wheel_with_ddp(H.config_source(extra="big: int = max(" + ", ".join(["1"] * 4000) + ")")), 3,
        "over the 10000-character cap"),
    "r2-explain-from-fifo": Attack(6, _from_file(lambda tmp: H.fifo(tmp / "in.json")), 2, "is not a regular file"),
    "r2-explain-from-dev-zero": Attack(6, _from_file(lambda tmp: Path("/dev/zero")), 2, "is not a regular file",
                                       max_rss_mib=BOMB_RSS_MIB),
    "r2-explain-from-over-cap": Attack(1, _from_file(lambda tmp: H.sparse(tmp / "big.json", 1 << 30)), 2,
                                       "over the 1048576-byte read cap", max_rss_mib=BOMB_RSS_MIB),
    "r2-explain-from-duplicate-key": Attack(7, _from_file(_json_file('{"bucket_size": 1, "bucket_size": 2}')), 2,
                                            "key 'bucket_size' is given more than once"),
    "r2-explain-from-nan": Attack(7, _from_file(_json_file('{"bucket_size": NaN}')), 2, "NaN is not a JSON value"),
    "r2-explain-from-infinity-json": Attack(7, _from_file(_json_file('{"bucket_size": -Infinity}'), "--json"), 2,
                                            "-Infinity is not a JSON value"),
    "r2-explain-from-overflowing-float": Attack(7, _from_file(_json_file('{"bucket_size": 1e999}')), 2,
                                                "1e999 is not a finite number"),
    "r2-explain-from-name-with-escape-and-newline": Attack(
        8, lambda tmp: cli("explain", "--from", str(tmp / "in\x1b[31m\nx.json")), 2, "in\\x1b[31m\\nx.json"),
    "r2-error-with-a-run-of-blanks": Attack(7, _blanks_key, 3, "characters left out"),
    "r2-wheel-two-members-one-name": Attack(
        7, lambda tmp: cli("gate", H.duplicate_member_wheel(tmp / "megatron_core-0.20.0-py3-none-any.whl")), 3,
        f"has two members at '{DDP_PATH}'"),
    "r2-sdist-decoy-outside-the-project-directory": Attack(
        7, _sdist_with(H.decoy_sdist_members), 3, "no single top-level directory"),
    "r2-sdist-decoy-beside-src-layout": Attack(
        7, _sdist_with(lambda: H.decoy_sdist_members(decoy_prefix="megatron_core-0.20.0/src/")), 3,
        "both megatron/ and src/megatron/"),
    "r2-sdist-two-members-one-name": Attack(
        7, _sdist_with(lambda: [*H.sdist_members("0.20.0"),
                                H.tar_member(f"megatron_core-0.20.0/{DDP_PATH}", H.flipped_config().encode())]), 3,
        f"has two members at 'megatron_core-0.20.0/{DDP_PATH}'"),
    "r2-wheel-purelib-member-over-a-root-member": Attack(
        7, lambda tmp: cli("gate", H.wheel(tmp / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0", members={
            f"megatron_core-0.20.0.data/purelib/{DDP_PATH}": H.flipped_config()})), 3,
        f"has two members at '{DDP_PATH}'"),
    "r2-accept-registry-is-matrix": Attack(7, _same_registry_and_matrix, 3, "--registry and --matrix both name",
                                           after=_registry_unchanged),
    "r2-resolve-schema-not-a-schema": Attack(7, None, None, "expected a Schema from compat.live_schema",
                                             api=lambda tmp: compat.resolve(schema="x"), error=InvalidValueError),
}


def _short_stderr(run: H.Run) -> None:
    assert len(run.stderr) < 2200 and "characters left out" in run.stderr, run.stderr[-300:]


def _no_constant(name):
    raise AssertionError(f"{name} in JSON output")


def _evil_file(dest: Path) -> Path:
    (dest / f"evil{EVIL.replace('/', '|')}").write_text("")
    return dest


def _one_line_per_file(run: H.Run) -> None:
    lines = run.stdout.splitlines()
    assert len(lines) == 3 and lines[1].startswith("  extra: evil") and lines[2].startswith("drift:"), lines


def _fifo_manifest(dest: Path) -> Path:
    (dest / "VENDORED.json").unlink()
    H.fifo(dest / "VENDORED.json")
    return dest


def _bad_manifest(dest: Path) -> Path:
    (dest / "VENDORED.json").write_text("{" * 100_000)
    return dest


def _manifest_dir(tmp: Path) -> Path:
    dest = _vendored(tmp)
    (dest / "VENDORED.json").unlink()
    (dest / "VENDORED.json").mkdir()
    (dest / "VENDORED.json" / "x").write_text("")
    return dest


def _fifo_inside(dest: Path) -> Path:
    (dest / "resolution.py").unlink()
    H.fifo(dest / "resolution.py")
    return dest


def _hard_linked(tmp: Path) -> Path:
    dest = _vendored(tmp)
    (tmp / "precious.py").write_text("precious\n")
    (dest / "resolution.py").unlink()
    os.link(tmp / "precious.py", dest / "resolution.py")
    return dest


def _outside_intact(tmp: Path) -> None:
    assert (tmp / "precious.py").read_text() == "precious\n"
    assert (tmp / "host/_vendor/mc/resolution.py").read_bytes() == (H.ROOT / "compat/resolution.py").read_bytes()


def _forged_delete(tmp: Path) -> Path:
    dest = _vendored(tmp)
    (dest / "mine.py").write_text("mine\n")
    (tmp / "host" / "_vendor" / "outside.py").write_text("outside\n")
    _manifest_edit(dest, lambda m: m["files"].update({"mine.py": "0" * 64, "../outside.py": "0" * 64,
                                                      "/etc/hostname": "0" * 64}))
    return dest


def _user_files_intact(tmp: Path) -> None:
    assert (tmp / "host/_vendor/mc/mine.py").read_text() == "mine\n"
    assert (tmp / "host/_vendor/outside.py").read_text() == "outside\n"


def _edit_and_rehash(tmp: Path) -> Path:
    import hashlib

    dest = _vendored(tmp)
    edited = (dest / "fp32_rule.py").read_bytes() + b"\nFP32 = False  # a quiet local patch\n"
    (dest / "fp32_rule.py").write_bytes(edited)
    _manifest_edit(dest, lambda m: m["files"].update({"fp32_rule.py": hashlib.sha256(edited).hexdigest()}))
    return dest


def _symlinked_data(tmp: Path) -> Path:
    dest = _vendored(tmp)
    (tmp / "elsewhere").mkdir()
    shutil.rmtree(dest / "data")
    (dest / "data").symlink_to(tmp / "elsewhere", target_is_directory=True)
    return dest


def _nothing_outside(tmp: Path) -> None:
    assert list((tmp / "elsewhere").iterdir()) == []


def _replaced(tmp: Path) -> None:
    before, _ = read_registry(tmp / "before" / "registry.json")
    after, _ = read_registry(tmp / "registry.json")
    old = next(r for r in before["releases"] if r["version"] == "0.19.2")
    new = next(r for r in after["releases"] if r["version"] == "0.19.2")
    assert old["configs"]["ddp"] != new["configs"]["ddp"] and new["yanked"] is old["yanked"]
    assert len(after["releases"]) == len(before["releases"])
    assert (tmp / "matrix.yaml").read_bytes() == (tmp / "before" / "matrix.yaml").read_bytes()


def _pinned(tmp: Path, version: str) -> None:
    after, _ = read_registry(tmp / "registry.json")
    assert version in [r["version"] for r in after["releases"]]
    assert f'version: "{version}"' in (tmp / "matrix.yaml").read_text()


def _megatron_installed() -> bool:
    try:
        importlib.metadata.version("megatron-core")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _cli_rows() -> list:
    """Every CLI row; all but the first of each (name prefix, exit code) group is marked slow: a local run tries
    each command's each outcome once (29 of 118 rows, a subprocess each), CI (CI=true) runs every row."""
    seen: set[tuple[str, int]] = set()
    rows = []
    for name in sorted(n for n, a in CATALOGUE.items() if a.build):
        group = (name.split("-")[0], CATALOGUE[name].code)
        rows.append(pytest.param(name, marks=[pytest.mark.slow] if group in seen else []))
        seen.add(group)
    return rows


@pytest.mark.parametrize("name", _cli_rows())
def test_cli_attack(name, tmp_path):
    attack = CATALOGUE[name]
    if attack.without_megatron and _megatron_installed():
        pytest.skip("megatron-core is installed: its metadata gives the version, package_info.py is not read")
    kwargs = attack.build(tmp_path)
    stdout = kwargs.pop("stdout", None)
    if stdout == -1:
        run = _run_with_stdout_closed(kwargs["args"])
    elif H.needs_a_process(env=kwargs.get("env"), stdout=stdout, max_rss_mib=attack.max_rss_mib):
        run = H.run_cli(kwargs.pop("args"), stdout=stdout, **kwargs)
        if isinstance(stdout, int):
            os.close(stdout)
    else:  # the same command without a child's start-up (~0.1 s of CPU a row)
        run = H.call_cli(kwargs.pop("args"), **kwargs)
    assert run.returncode == attack.code, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr[-2000:]
    assert "\x1b" not in run.stdout + run.stderr
    if attack.code in (2, 3):
        lines = run.stderr.splitlines()
        assert len(lines) == 1, run.stderr[-3000:]
        assert lines[0].startswith("error: " if attack.code == 3 else "usage error: "), lines[0]
        assert attack.phrase in lines[0], lines[0][:3000]
    else:
        assert attack.phrase in run.stdout, run.stdout[-3000:]
    if attack.max_rss_mib is not None and run.max_rss_mib == run.max_rss_mib:  # nan: no /proc to ask
        assert run.max_rss_mib < attack.max_rss_mib, f"peak memory {run.max_rss_mib:.0f} MiB"
    if attack.after:
        attack.after(tmp_path, run)


@pytest.mark.parametrize("name", ["against-5000-digits", "latest-keyword-wins-over-directory",
                                  "r2-accept-registry-is-matrix"])
def test_a_row_run_in_process_sees_what_a_child_sees(name, tmp_path):
    """``call_cli`` stands in for ``run_cli`` in the rows that need no process: the same exit code, stdout and
    stderr, byte for byte (a usage error from argparse, a row with its own cwd and env, a matrix gate's error)."""
    kwargs = CATALOGUE[name].build(tmp_path)
    args = kwargs.pop("args")
    assert not H.needs_a_process(env=kwargs.get("env"), max_rss_mib=CATALOGUE[name].max_rss_mib)
    child, here = H.run_cli(args, **kwargs), H.call_cli(args, **kwargs)
    assert (here.returncode, here.stdout, here.stderr) == (child.returncode, child.stdout, child.stderr)
    assert here.returncode == CATALOGUE[name].code


def _run_with_stdout_closed(args) -> H.Run:
    """The child starts with file descriptor 1 closed (``>&-`` in a shell), so Python sets sys.stdout to None."""
    env = {**os.environ, "PYTHONPATH": str(H.ROOT)}
    proc = subprocess.run([sys.executable, "-m", "compat", *args], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          preexec_fn=lambda: os.close(1), env=env, text=True, timeout=120)
    return H.Run(proc.returncode, "", proc.stderr, float("nan"))


@pytest.mark.parametrize("name", sorted(n for n, a in CATALOGUE.items() if a.api))
def test_api_attack(name, tmp_path):
    attack = CATALOGUE[name]
    with pytest.raises(attack.error) as err:
        attack.api(tmp_path)
    assert type(err.value) is attack.error and isinstance(err.value, CompatError)
    assert "\n" not in str(err.value)
    if attack.build is None:
        assert attack.phrase in str(err.value), str(err.value)


def test_catalogue_covers_every_class():
    assert {a.klass for a in CATALOGUE.values()} == {1, 3, 6, 7, 8, 9}
    assert len(CATALOGUE) >= 70


# ------------------------------------------------------------------------------------ 3. writes, beyond one run
SLOW_READ = ("import sys, time\n"
             "import compat.tooling.gate.accept_pin as a\n"
             "read = a.read_registry\n"
             "a.read_registry = lambda path: (read(path), time.sleep({pause}))[0]  # widen the read-write window\n"
             "{disable}"
             "from tools.matrix import main\n"
             "sys.exit(main(sys.argv[1:]))\n")


def _concurrent_accepts(tmp: Path, versions, *, disable_lock: bool = False):
    reg, mat = _registry_copy(tmp), _matrix(tmp)
    disable = ("import contextlib, compat.tooling.fsutil as f\nf.locked = lambda *a, **k: contextlib.nullcontext()\n"
               if disable_lock else "")
    script = SLOW_READ.format(pause=0.6, disable=disable)
    env = {**os.environ, "PYTHONPATH": str(H.ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", script, "gate",
                               H.wheel(tmp / f"megatron_core-{v}-py3-none-any.whl", version=v), "--registry", reg,
                               "--matrix", mat, "--accept"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for v in versions]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    after, _ = read_registry(reg)
    return results, [r["version"] for r in after["releases"]], mat


@pytest.mark.slow
def test_concurrent_accepts_lose_no_update(tmp_path):
    """Four accepts at once, each pausing between reading and writing the registry: all four versions end up in
    registry.json and matrix.yaml, and matrix.yaml still validates against the registry."""
    versions = ["0.20.0", "0.21.0", "0.22.0", "0.23.0"]
    results, registered, mat = _concurrent_accepts(tmp_path, versions)
    assert [code for code, _ in results] == [0] * 4, results
    assert set(versions) <= set(registered)
    matrix = H_matrix()
    assert [p.version for p in matrix.load_matrix(mat, registry_path=tmp_path / "registry.json")] == \
        ["0.19.2", *versions]


def H_matrix():
    from tools import matrix

    return matrix


class _FullDisk:
    """A file whose writes stop with ENOSPC after ``budget`` bytes, as on a disk that fills up midway."""

    def __init__(self, fh, budget: int):
        self._fh, self._left = fh, budget

    def write(self, data):
        if len(data) > self._left:
            self._fh.write(data[:self._left])
            self._left = 0
            raise OSError(28, "No space left on device")
        self._left -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


def _fill_disk_when(monkeypatch, match: str, budget: int = 100):
    import compat.tooling.fsutil as fsutil

    real = os.fdopen

    def fdopen(fd, *args, **kwargs):
        fh = real(fd, *args, **kwargs)
        return _FullDisk(fh, budget) if match in os.readlink(f"/proc/self/fd/{fd}") else fh

    monkeypatch.setattr(fsutil.os, "fdopen", fdopen)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to tell which file is being written")
@pytest.mark.parametrize("full", [".registry.json.", ".matrix.yaml."])
def test_full_disk_midway_leaves_the_old_files_and_later_commands_work(tmp_path, monkeypatch, full):
    from compat.tooling.fsutil import WriteError
    from compat.tooling.gate import accept, gate, load_registry

    reg, mat = _registry_copy(tmp_path), _matrix(tmp_path)
    before = {p: p.read_bytes() for p in (reg, mat)}
    wheel = H.wheel(tmp_path / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0")
    report = gate(wheel, load_registry(reg))
    _fill_disk_when(monkeypatch, full)
    with pytest.raises(CompatError, match="No space left on device") as err:
        accept(report, reg, pin=H_matrix().MatrixTools.pinner(mat, reg))
    assert isinstance(err.value, WriteError) or "matrix.yaml not updated" in str(err.value)
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in (reg, mat)} == before  # both old files intact, none truncated
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    run = H.call_cli(["gate", wheel, "--registry", reg])
    assert run.returncode == 0 and "vs registry 0.19.2: COMPATIBLE" in run.stdout, run.stderr


def test_lock_held_elsewhere_times_out_with_a_typed_error(tmp_path):
    import fcntl

    from compat.tooling.fsutil import WriteError, locked

    target = tmp_path / "registry.json"
    with open(tmp_path / ".registry.json.lock", "w") as other:  # another process's open file description
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(WriteError, match="stayed locked by another process"):
            with locked(target, timeout=0.2):
                pass
    with locked(target, timeout=0.2):  # released: free again
        pass


# ------------------------------------------------------------------------------------ 7. exit codes, in-process
def _raiser(exc):
    def command(args):
        raise exc
    return command


@pytest.mark.parametrize("exc, phrase", [
    (CandidateError("line one\n## Accepted\n\x1b[31mred"), "error: line one ## Accepted \\x1b[31mred"),
    (CandidateError("x" * 100_000 + " the cause"), "...(98010 characters left out)..."),
    (CandidateError("x" * 100_000 + " the cause"), "xxx the cause\n"),  # the cause, usually last, is kept
    (TypeError("a bug\nin two lines"), "internal error, please report it: TypeError: a bug in two lines"),
    (RecursionError("deep"), "too deeply nested"),
    (FileNotFoundError(2, "No such file or directory", "/no\nwhere"), "cannot access '/no\\nwhere'"),
])
def test_every_error_is_one_line(monkeypatch, capsys, exc, phrase):
    from compat.tooling import cli

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda *a: parser)
    parser._subparsers._group_actions[0].choices["fields"].set_defaults(func=_raiser(exc))
    assert cli.main(["fields"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and phrase in err, err[:300]


def test_internal_error_traceback_on_request(monkeypatch):
    from compat.tooling import cli

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda *a: parser)
    parser._subparsers._group_actions[0].choices["fields"].set_defaults(func=_raiser(TypeError("a bug")))
    monkeypatch.setenv(cli.TRACEBACK_ENV, "1")
    with pytest.raises(TypeError, match="a bug"):
        cli.main(["fields"])


def test_a_read_only_file_is_not_replaced(tmp_path, monkeypatch):
    """A rename replaces a read-only file as easily as any other; atomic writes keep what its owner protected.
    (os.access is asked, as root would be allowed anything: the test answers for a non-root user.)"""
    import compat.tooling.fsutil as fsutil
    from compat.tooling.fsutil import WriteError, atomic_write_text

    target = tmp_path / "VENDORED.json"
    target.write_text("old\n")
    real = os.access
    monkeypatch.setattr(fsutil.os, "access", lambda p, mode, **kw: False if Path(p) == target else real(p, mode))
    with pytest.raises(WriteError, match="it is read-only; the previous content is unchanged"):
        atomic_write_text(target, "new\n")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["VENDORED.json"]


# ------------------------------------------------------------------------------------ hostile inputs: the evaluator
EVALUATOR_BOMBS = {  # a candidate's check -> what it would allocate if it were evaluated
    "repeat-of-a-repeat": "'a' * 10000 * 10000 * 30 == ''",  # 3 GB
    "star-width": "'%*d' % (2000000000, 1) == ''",  # 1.9 GB
    "huge-zero-pad": "'%0999999999d' % 1 == ''",  # 1 GB
    "str-of-a-nested-repeat": "len(str([[self.x] * 10000] * 10000)) > 0",  # 300 MB of text
    "equal-100m-lists": "[0] * 10000 * 10000 == [0] * 10000 * 10000",  # 1.6 GB
    "many-widths": "'%999d' * 1000 % tuple([1] * 1000) == ''",  # 1 MB per width, 1,000 of them
}


@pytest.mark.parametrize("name", sorted(EVALUATOR_BOMBS))
def test_evaluator_skips_a_check_that_would_exceed_its_caps(name):
    """In a child: the check is counted as not evaluated (never guessed), and the child stays small."""
    run = H.run_python(H.PRECHECK_PROGRAM.format(source=H.dataclass_with_check(EVALUATOR_BOMBS[name]), value="1"))
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert (out["fires"], out["evaluated"], out["not_evaluated"]) == (False, 0, 1), out
    if run.max_rss_mib == run.max_rss_mib:
        assert run.max_rss_mib < 200, f"peak memory {run.max_rss_mib:.0f} MiB"


@pytest.mark.parametrize("test, value, fires", [
    ("self.x * self.x * self.x < 5", "10 ** 200000", None),  # a user's 200,000-digit int: skipped
    ("self.x < 5", "10 ** 200000", None),
    ("self.x < 5", "10 ** 1000", True),  # under the int cap: checked, refused, shown
    ("self.x * 3 < 5", "1", False),
    ("len('ab' * 3) == 7", "1", True),  # small values are still evaluated
    ("'%5d|' % self.x == '    1|'", "1", False),
])
def test_evaluator_bounds_ints_and_still_evaluates_small_values(test, value, fires):
    out = H.precheck_outcome(H.dataclass_with_check(test), value)  # in process: nothing here can take gigabytes
    assert out["fires"] is bool(fires) and out["not_evaluated"] == (1 if fires is None else 0), out
    if fires:
        assert out["message"].startswith("megatron-core 0.99.0 rejects") and len(out["message"]) < 5000


def test_rendered_message_leaves_a_large_value_as_its_expression():
    from compat.evaluate import MAX_VALUE_SIZE, render

    env = {"x": [0] * MAX_VALUE_SIZE, "y": 10 ** 5000, "z": [0] * 3}
    assert render("f'x={self.x!r} y={self.y} n={len(self.x)} z={self.z!r}'", env) == \
        "x={self.x} y={self.y} n={len(self.x)} z=[0, 0, 0]"


def test_errors_show_a_large_or_unshowable_value_bounded():
    from compat.errors import ConstraintError, FieldTypeError, value_repr

    assert value_repr(10 ** 5000) == f"<an int of {(10 ** 5000).bit_length()} bits>"  # repr() would raise
    assert value_repr([10 ** 5000]) == "<a list that cannot be shown>"
    assert value_repr(list(range(10 ** 6))).endswith("15, ...]") and len(value_repr("a" * 10 ** 6)) <= 300
    assert value_repr({"a": [1, 2]}) == "{'a': [1, 2]}"
    error = FieldTypeError("ddp_bucket_size", [[0] * 10 ** 6] * 1000, "int")
    assert len(str(error)) < 600 and str(error).startswith("field 'ddp_bucket_size': expected int, got list [[0, 0")
    assert "x=<an int of" in str(ConstraintError("r", "m", {"x": 10 ** 5000}, "0.19.2"))


def test_one_line_is_bounded_and_keeps_both_ends():
    from compat.errors import MAX_LINE_CHARS, one_line

    line = one_line("start" + " " * 1_000_000 + "\x1b[31m" + "y" * 3_000_000 + " the cause\n")
    assert line.startswith("start ") and line.endswith(" the cause") and "\x1b" not in line
    assert len(line) < MAX_LINE_CHARS + 100 and "characters left out" in line
    assert one_line("a \t\n b\x1b") == "a b\\x1b"


def test_explain_set_refuses_nan_and_overflowing_floats():
    for raw in ("NaN", "-Infinity", "1e999"):
        run = H.call_cli(["explain", "--set", f"bucket_size={raw}"])
        assert run.returncode == 2 and raw in run.stderr and "Traceback" not in run.stderr, run.stderr


# ------------------------------------------------------------------------------------ hostile inputs: checkpoints, locks
def test_malformed_ckpt_lane_data_leaves_the_report_without_its_section(tmp_path, monkeypatch, capsys):
    from compat.tooling.cli import main
    from compat.tooling.gate import candidate, lanes

    wheel = str(H.wheel(tmp_path / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0"))
    monkeypatch.setattr(candidate, "extract_candidate", memoized(candidate.extract_candidate))  # one wheel, 5 gates
    assert main(["gate", wheel]) == 0 and "## Checkpoints" in capsys.readouterr().out  # the section, when readable

    for bad in ({"pairs": [{"saved_on": "0.19.2"}]}, {"pairs": "x"}, [], {"pairs": [
            {"saved_on": "x", "loaded_on": "0.20.0", "exact": [], "failures": [], "losses": []}]}):
        monkeypatch.setattr(lanes, "load_json",
                            lambda name, bad=bad, real=lanes.load_json: bad if name == "ckpt_lane.json" else real(name))
        code = main(["gate", wheel])
        out, err = capsys.readouterr()
        assert code == 0 and "COMPATIBLE" in out and "## Checkpoints" not in out, out
        assert err.count("\n") == 1 and err.startswith("warning: compat/tooling/data/ckpt_lane.json"), err


def test_malformed_training_lane_data_leaves_the_report_without_its_section(tmp_path, monkeypatch, capsys):
    from compat.tooling.cli import main
    from compat.tooling.gate import candidate, lanes

    wheel = str(H.wheel(tmp_path / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0"))
    monkeypatch.setattr(candidate, "extract_candidate", memoized(candidate.extract_candidate))  # one wheel, 5 gates
    assert main(["gate", wheel]) == 0 and "## Training" in capsys.readouterr().out  # the section, when readable
    for bad in ({"pairs": [{"old": "0.19.2", "new": "0.20.0", "variants": []}]}, {"pairs": None}):
        monkeypatch.setattr(lanes, "load_json",
                            lambda name, bad=bad, real=lanes.load_json: bad if name == "training_lane.json" else real(name))
        code = main(["gate", wheel])
        out, err = capsys.readouterr()
        assert code == 0 and "## Training" not in out and "## Checkpoints" in out, out
        assert err.count("\n") == 1 and err.startswith("warning: compat/tooling/data/training_lane.json"), err
        assert err.rstrip().endswith("no Training section"), err


def test_lost_tensor_names_are_escaped():
    from compat.tooling.gate.ckpt import sentences

    verdict = {"status": "measured", "saved_on": "0.18.2", "loaded_on": "0.19.2", "exact": [], "failures": [],
               "losses": [{"variant": "plain", "lost": ["exp_avg\n# injected", "*bold*"], "message": "m"}]}
    line = sentences(verdict)[0]
    assert "\n" not in line and "`exp_avg\\n# injected`" in line and "`*bold*`" in line


def test_ckpt_verdicts_refuses_a_non_version_in_one_line(tmp_path, capsys):
    from tools import ckpt_verdicts

    results = tmp_path / "results.json"
    results.write_text(json.dumps({"pairs": {"a": {"old": "x.y", "new": "not a version", "variants": {}}}}))
    assert ckpt_verdicts.main(["--results", str(results), "--out", str(tmp_path / "out.json")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "not a version" in err
    assert not (tmp_path / "out.json").exists()


def test_a_lock_held_by_this_thread_is_refused_at_once(tmp_path):
    from compat.errors import CompatError as Err
    from compat.tooling.fsutil import locked

    path = tmp_path / "registry.json"
    with locked(path):
        with pytest.raises(Err, match="already locked by this command"):
            with locked(tmp_path / "." / "registry.json", timeout=60):
                pass
    with locked(path):  # released: a later lock is fine
        pass


@pytest.mark.slow
def test_the_most_parsing_the_config_gate_does_stays_bounded(tmp_path):
    """Every config file the gate reads, each just under the per-file token cap: a verdict (whatever a missing
    TransformerConfig means to the gate), no error, and the child far under the bomb limit."""
    run = H.run_cli(_three_dense_config_files(tmp_path)["args"])
    assert run.returncode in (0, 1) and run.stderr == "", run.stderr[-2000:]
    if run.max_rss_mib == run.max_rss_mib:
        assert run.max_rss_mib < BOMB_RSS_MIB, f"peak memory {run.max_rss_mib:.0f} MiB"


# ------------------------------------------------------------------------------------ hostile inputs: parse_source
def test_parse_source_refuses_over_its_caps_before_parsing():
    from compat.tooling.pysource import SourceTooLargeError, SourceUnparsableError, parse_source

    assert parse_source(b"x = 1\n", "ok.py").body[0].lineno == 1
    with pytest.raises(SourceTooLargeError, match="over the 10-byte cap"):
        parse_source(b"x = 1\n" * 2, "m.py", max_bytes=10)
    with pytest.raises(SourceTooLargeError, match="holds over 5 tokens"):
        parse_source("a;" * 3, "m.py", max_tokens=5)
    with pytest.raises(SourceUnparsableError, match="int-to-str digit limit"):
        parse_source("x = 0x" + "f" * 4000, "m.py")
    with pytest.raises(SourceUnparsableError, match=r"cannot parse 'm\\x1b.py'"):
        parse_source("def (:", "m\x1b.py")
    with pytest.raises(SourceUnparsableError, match="nested too deeply"):
        parse_source("x = " + "-" * 100_000 + "1", "m.py")


def test_a_source_budget_is_shared_by_the_files_of_one_source():
    from compat.tooling.pysource import SourceBudget, SourceTooLargeError, parse_source

    budget = SourceBudget(max_bytes=1000, max_nodes=100)
    parse_source("a;" * 10, "a.py", budget)  # 20 tokens; 31 nodes: the module, 10 statements, 10 names, 10 contexts
    parse_source("a;" * 10, "b.py", budget)  # 31 + 2 x 20 reserved: within
    assert budget.nodes == 62
    with pytest.raises(SourceTooLargeError, match="parsed up to 'c.py' may add up to 102 syntax tree nodes"):
        parse_source("a;" * 10, "c.py", budget)  # 62 + 2 x 20 reserved: refused before it is parsed
    with pytest.raises(SourceTooLargeError, match="parsed up to 'd.py' add up to 4 syntax tree nodes"):
        parse_source("a", "d.py", SourceBudget(max_nodes=3))  # 2 reserved, 4 counted
    with pytest.raises(SourceTooLargeError, match="add up to 1081 bytes, over the 1000-byte cap"):
        SourceBudget(max_bytes=1000).reserve("e.py", 1081, 0)


def test_the_checks_of_one_call_share_one_work_budget():
    """400 checks that each build a 99,000-character string: the first ones are evaluated, the rest are counted as
    not evaluated once the call's budget is spent (16 M characters), instead of 400 x 99 KB of work per call."""
    body = "".join("        assert len('a' * 99000) > 0, 'never'\n" for _ in range(400))
    source = H.dataclass_with_check("self.x > 0") + body
    out = H.precheck_outcome(source, "1")  # in process: the budget is what keeps it at 16 M characters
    assert out["checks"] == 401 and not out["fires"], out
    assert 100 < out["evaluated"] < 200 and out["evaluated"] + out["not_evaluated"] == 401, out


# ------------------------------------------------------------------------------------ hostile inputs: install paths
def test_an_archive_is_read_where_an_installer_puts_its_files(tmp_path):
    """The positive side of the duplicate and decoy rows: a wheel's .data/purelib lands at the root, and an sdist
    without one top-level directory is built from its root when that has a pyproject.toml."""
    from compat.tooling.extract import extract_candidate

    wheel = H.wheel(tmp_path / "megatron_core-0.20.0-py3-none-any.whl", version="0.20.0", ddp="", members={
        f"megatron_core-0.20.0.data/purelib/{DDP_PATH}": H.flipped_config()})
    with pytest.raises(CandidateError, match="has two members at"):  # ddp="" is still a member at DDP_PATH
        open_source(wheel)
    purelib = tmp_path / "purelib.whl"
    with zipfile.ZipFile(purelib, "w") as z:
        z.writestr("megatron_core-0.20.0.dist-info/METADATA", H.metadata("0.20.0"))
        z.writestr(f"megatron_core-0.20.0.data/purelib/{DDP_PATH}", H.flipped_config())
    facts = extract_candidate(purelib)
    assert facts["version"] == "0.20.0"
    assert next(f for f in facts["ddp"]["fields"] if f["name"] == "grad_reduce_in_fp32")["default"] is True

    root_sdist = _put(tmp_path, "x.tar", H.sdist_bytes([
        H.tar_member("pyproject.toml", b"[project]\nname = 'megatron-core'\n"),
        H.tar_member("PKG-INFO", H.metadata("0.20.0").encode()),
        H.tar_member(DDP_PATH, H.flipped_config().encode()),
        H.tar_member("docs/megatron/core/distributed/distributed_data_parallel_config.py", H.config_source().encode())]))
    source = open_source(root_sdist)
    assert source.package_root() == "" and source.metadata()["Version"] == "0.20.0"
    assert b"grad_reduce_in_fp32: bool = True" in source.read_relative(DDP_PATH)
