"""Builders of hostile and odd inputs for test_hostile.py and test_archive.py: candidates rendered from the
registry (no network), hand-made zip and tar archives whose headers lie, decompression bombs made in
milliseconds, FIFOs, and two runners of the real CLI: in a subprocess that also reports the child's peak memory
(``run_cli``), and in this process (``call_cli``, no interpreter start-up) where a row needs nothing a process
shows (``needs_a_process``)."""
from __future__ import annotations

import contextlib
import io
import os
import struct
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from compat.configs import MODEL_PARALLEL_PATH, TRANSFORMER_PATH
from compat.registry import registry
from compat.tooling.extract import DDP_PATH, OPTIMIZER_PATH

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20


# ------------------------------------------------------------------------------------ the CLI in a subprocess
@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    max_rss_mib: float  # the child's own peak resident memory (VmHWM at exit); nan where /proc is missing


# ``python -m compat`` that records its own peak memory at exit. VmHWM belongs to the address space, which exec
# replaces; ru_maxrss would not do: Linux carries the parent's high-water mark across fork and exec. What it imports
# is what this process imports (child_pythonpath).
_MEASURED = """import atexit, os, runpy, sys
def _peak():
    try:
        with open('/proc/self/status') as fh:
            kib = next(line.split()[1] for line in fh if line.startswith('VmHWM:'))
        with open(os.environ['HOSTILE_PEAK_FILE'], 'w') as out:
            out.write(kib)
    except (OSError, StopIteration):
        pass
atexit.register(_peak)
"""
_RUN_CLI = "runpy.run_module('compat', run_name='__main__', alter_sys=True)\n"
_RUN_MATRIX_GATE = f"runpy.run_path({str(ROOT / 'tools' / 'matrix.py')!r}, run_name='__main__')\n"


def run_cli(args, *, cwd=None, env=None, stdout=None, timeout=120) -> Run:
    """``python -m compat ARGS`` (the installed compat, else this checkout's) with its exit code, output and peak memory; a ``gate``
    with ``--matrix`` runs as the matrix tools' gate (``python -m tools.matrix gate ...``, which owns matrix.yaml).
    ``stdout``: a file descriptor to hand the child instead of a capture file (a pipe whose reader is gone,
    /dev/full)."""
    runner = _RUN_MATRIX_GATE if is_matrix_gate(args) else _RUN_CLI
    return _run_measured(_MEASURED + runner, args, cwd=cwd, env=env, stdout=stdout, timeout=timeout)


def is_matrix_gate(args) -> bool:
    """A ``gate`` with ``--matrix``: the matrix tools' command (``python -m tools.matrix gate``), not the package's."""
    return bool(args) and str(args[0]) == "gate" and "--matrix" in map(str, args)


def cli_argv(args) -> list[str]:
    """The command line ``run_cli`` runs for ``args``, for a caller that starts the process itself."""
    args = [str(a) for a in args]
    return [sys.executable, str(ROOT / "tools" / "matrix.py"), *args] if is_matrix_gate(args) else \
        [sys.executable, "-m", "compat", *args]


def needs_a_process(*, env=None, stdout=None, max_rss_mib=None) -> bool:
    """Whether a CLI run can only be checked in a child: its own peak memory, a stdout descriptor handed to it (a
    closed pipe, /dev/full, none at all) or a ``PYTHON*`` variable, which only interpreter start-up reads."""
    return max_rss_mib is not None or stdout is not None or any(k.startswith("PYTHON") for k in (env or {}))


def call_cli(args, *, cwd=None, env=None, matrix_tools: bool | None = None) -> Run:
    """What ``run_cli`` runs, called in this process: the entry function of ``python -m compat`` (or of
    ``tools/matrix.py`` for a matrix gate, or where ``matrix_tools``) with ARGS, stdout and stderr captured as the
    child's would be (UTF-8, stdin from /dev/null), a SystemExit (argparse) taken as the exit code. ``env`` and
    ``cwd`` hold for the call only; an exception that escapes the entry function propagates (a child would print
    its traceback). ``max_rss_mib`` is nan: a row that checks peak memory needs a process (``needs_a_process``)."""
    from compat.tooling.cli import main as compat_main

    argv = [str(a) for a in args]
    if is_matrix_gate(argv) if matrix_tools is None else matrix_tools:
        from tools.matrix import main as entry
    else:
        entry = compat_main
    out, err = _captured("strict"), _captured("backslashreplace")  # a child's defaults under PYTHONIOENCODING=utf-8
    with _process_state(cwd, env), _warnings_as_a_child_shows_them(), open(os.devnull) as stdin, \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        saved_stdin, sys.stdin = sys.stdin, stdin
        try:
            code = entry(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdin = saved_stdin
            out.flush()
            err.flush()
    return Run(code, _text(out), _text(err), float("nan"))


def _captured(errors: str) -> io.TextIOWrapper:
    # no fileno(): the CLI's "silence stdout after a failed write" (os.dup2 onto it) cannot reach pytest's own fd 1
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    return stream.buffer.getvalue().decode("utf-8", "replace")


@contextlib.contextmanager
def _warnings_as_a_child_shows_them():
    """A fresh interpreter's warning filters, and a warning printed to (the captured) stderr, not recorded by
    pytest: a warning the CLI lets escape shows in the output, as it would from ``python -m compat``."""
    def to_stderr(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category, append=True)
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        warnings.showwarning = to_stderr
        yield


@contextlib.contextmanager
def _process_state(cwd, env):
    """The environment (as run_cli builds it for its child) and working directory of one call, restored after."""
    saved_env, saved_cwd, saved_tempdir = dict(os.environ), os.getcwd(), tempfile.tempdir
    os.environ.update({k: str(v) for k, v in (env or {}).items()})
    os.environ.pop("MCORE_COMPAT_TRACEBACK", None)
    os.chdir(cwd or ROOT)
    tempfile.tempdir = None  # tempfile reads TMPDIR once and keeps it: a child would read this call's
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        tempfile.tempdir = saved_tempdir


def child_pythonpath(env=None) -> str:
    """PYTHONPATH for a child that imports what this process imports: ``env``'s own PYTHONPATH (if any), then this
    process's sys.path in its order. So the unit session's installed compat stays ahead of the checkout that
    tests/conftest.py appends (for tools/, the matrix gate's; compat where none is installed), and tests/unit (the
    catalogue's own folder, on sys.path in a pytest run) is there for PRECHECK_PROGRAM."""
    return os.pathsep.join([*filter(None, [(env or {}).get("PYTHONPATH")]), *(p for p in sys.path if p)])


def run_python(code: str, *, timeout=120) -> Run:
    """Python ``code`` in a child (the installed compat, else this checkout's), with its exit code, output and peak memory."""
    return _run_measured(_MEASURED + code, [], timeout=timeout)


def _run_measured(program: str, args, *, cwd=None, env=None, stdout=None, timeout=120) -> Run:
    with tempfile.TemporaryDirectory() as scratch:
        peak = Path(scratch) / "peak"
        full_env = {**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {}),
                    "PYTHONPATH": child_pythonpath(env), "HOSTILE_PEAK_FILE": str(peak)}
        full_env.pop("MCORE_COMPAT_TRACEBACK", None)
        with open(peak.with_name("out"), "w+b") as out, open(peak.with_name("err"), "w+b") as err:
            proc = subprocess.Popen([sys.executable, "-c", program, *map(str, args)], cwd=cwd or ROOT,
                                    env=full_env, stdout=out if stdout is None else stdout, stderr=err,
                                    stdin=subprocess.DEVNULL)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                shown = " ".join(map(str, args))[:200] or program[-200:]
                raise AssertionError(f"{shown} did not finish in {timeout}s (a hang)") from None
            out.seek(0)
            err.seek(0)
            rss = int(peak.read_text()) / 1024 if peak.is_file() else float("nan")
            return Run(proc.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                       rss)


# ------------------------------------------------------------------------------------ candidates from the registry
def _literal(value) -> str:
    if isinstance(value, list):
        return "(" + "".join(f"{_literal(v)}, " for v in value) + ")"
    return repr(value)


def config_source(version: str = "0.19.2", *, optimizer: bool = False, extra: str = "", docs=None) -> str:
    """Python source of the registry's DDPConfig (or OptimizerConfig fields) of ``version``, as megatron writes
    it: same names, annotations, defaults and docs. ``extra`` is appended to the class body; ``docs`` overrides
    field docs by name."""
    from compat.registry_format import decode_snapshot

    reg = registry()
    snap = decode_snapshot(reg.data, reg.releases[version]["configs"]["optimizer" if optimizer else "ddp"])
    cls = "OptimizerConfig" if optimizer else "DistributedDataParallelConfig"
    lines = ["import torch", "from dataclasses import dataclass, field", "from typing import Optional, Tuple", "",
             "@dataclass", f"class {cls}:"]
    for f in snap["fields"]:
        if "default_expr" in f:
            default = f" = {f['default_expr']}"
        elif "default" in f:
            default = f" = {_literal(f['default'])}"
        else:
            default = ""
        lines.append(f"    {f['name']}: {f['annotation']}{default}")
        doc = (docs or {}).get(f["name"], f.get("doc"))
        if doc:
            lines.append(f"    {doc!r}")
    lines += [f"    {line}" for line in extra.splitlines()]
    post = snap["post_init"]
    if post["reads"] or post["writes"]:
        lines.append("    def __post_init__(self):")
        lines += [f"        if self.{n}: pass" for n in post["reads"]]
        lines += [f"        self.{n} = None" for n in post["writes"]]
    return "\n".join(lines) + "\n"


def _model_field_line(f: dict) -> str:
    if "default_expr" in f:
        default = f" = {f['default_expr']}"
    elif f.get("factory"):
        default = f" = field(default_factory=lambda: {f['default']!r})"
    elif "default" in f:
        default = f" = {_literal(f['default'])}"
    else:
        default = ""
    line = f"    {f['name']}: {f['annotation']}{default}"
    return line + (f"\n    {f['doc']!r}" if f.get("doc") else "")


def model_config_files(version: str = "0.19.2") -> dict[str, str]:
    """model_parallel_config.py and transformer_config.py holding the registry's ModelParallelConfig,
    TransformerConfig and (where the release has it) MLATransformerConfig of ``version``: same fields per class."""
    from compat.registry_format import decode_snapshot

    reg = registry()
    configs = reg.releases[version]["configs"]
    head = ["import torch", "from dataclasses import dataclass, field", "from typing import *", ""]
    fields = decode_snapshot(reg.data, configs["transformer"])["fields"]
    mla = decode_snapshot(reg.data, configs["mla"])["fields"] if "mla" in configs else []

    def body(records) -> list[str]:
        return [_model_field_line(f) for f in records] or ["    pass"]

    # TransformerConfig as one class holding the merged fields in their dataclass order (fields it overrides keep
    # ModelParallelConfig's position); MLATransformerConfig adds the fields it declares itself
    parallel = head + ["@dataclass", "class ModelParallelConfig:", "    pass"]
    transformer = head + ["@dataclass", "class TransformerConfig:", *body(fields)]
    if mla:
        transformer += ["", "@dataclass", "class MLATransformerConfig(TransformerConfig):",
                        *body([f for f in mla if f.get("owner") == "MLATransformerConfig"])]
    return {MODEL_PARALLEL_PATH: "\n".join(parallel) + "\n", TRANSFORMER_PATH: "\n".join(transformer) + "\n"}


def metadata(version: str = "0.19.2", requires_python: str = ">=3.12", extra: str = "") -> str:
    return (f"Metadata-Version: 2.1\nName: megatron-core\nVersion: {version}\nRequires-Python: {requires_python}\n"
            f"{extra}")


def wheel(path: Path, *, version: str = "0.19.2", ddp: str | None = None, optimizer: str | None = None,
          meta: str | None = None, members: dict | None = None, base: str = "0.19.2") -> Path:
    """A wheel claiming ``version`` whose config files are the registry's ``base`` unless given."""
    dist_info = "".join(c if c.isalnum() or c == "." else "_" for c in version)  # a claimed version may hold '/'
    files = {f"megatron_core-{dist_info}.dist-info/METADATA": meta if meta is not None else metadata(version),
             DDP_PATH: ddp if ddp is not None else config_source(base),
             OPTIMIZER_PATH: optimizer if optimizer is not None else config_source(base, optimizer=True),
             **model_config_files(base), **(members or {})}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in files.items():
            z.writestr(name, body)
    return path


def tree(root: Path, *, version: str = "0.19.2", base: str = "0.19.2") -> Path:
    """A Megatron-LM checkout layout claiming ``version`` (package_info.py), with the registry's ``base`` configs."""
    major, minor, patch = version.split(".")
    files = {DDP_PATH: config_source(base), OPTIMIZER_PATH: config_source(base, optimizer=True),
             **model_config_files(base), "megatron/core/package_info.py": f"MAJOR = {major}\nMINOR = {minor}\nPATCH = {patch}\n"
                                              "PRE_RELEASE = ''\n"}
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)
    return root


def tar_member(name: str, body: bytes, **attrs) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(body)
    for k, v in attrs.items():
        setattr(info, k, v)
    return info, body


def sdist_bytes(members, *, fmt=tarfile.PAX_FORMAT) -> bytes:
    """An uncompressed tar of (TarInfo, body) pairs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for info, body in members:
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def sdist_members(version: str = "0.19.2", base: str = "0.19.2"):
    prefix = f"megatron_core-{version}/"
    return [tar_member(prefix + "PKG-INFO", metadata(version).encode()),
            tar_member(prefix + DDP_PATH, config_source(base).encode()),
            tar_member(prefix + OPTIMIZER_PATH, config_source(base, optimizer=True).encode()),
            *(tar_member(prefix + path, body.encode()) for path, body in model_config_files(base).items())]


# ------------------------------------------------------------------------------------ bombs, built in milliseconds
def deflate_zeros(mib: int, prefix: bytes = b"") -> bytes:
    """A raw deflate stream of ``prefix`` + ``mib`` MiB of zeros, without compressing them: each full-flushed
    1 MiB piece is byte-identical, so one is compressed and repeated."""
    def piece(data: bytes) -> bytes:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush(zlib.Z_FULL_FLUSH)

    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # a final empty block
    return (piece(prefix) if prefix else b"") + piece(bytes(MIB)) * mib + end


def gzip_of_deflate(raw_deflate: bytes, crc: int = 0, size: int = 0) -> bytes:
    """A gzip member around a raw deflate stream (CRC and size need not be right: a capped reader never gets there)."""
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + raw_deflate + struct.pack("<II", crc, size & 0xFFFFFFFF)


def tar_header(name: str, size: int, typeflag: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, typeflag
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def raw_zip(entries) -> bytes:
    """A zip archive written by hand, so headers can lie. ``entries``: dicts with name, data (already compressed),
    method (0 stored, 8 deflate), flags (1: encrypted), crc, file_size (claimed), compress_size (claimed; default
    len(data)).
    ``eocd_entries`` / ``eocd_size`` on the first entry override the end record."""
    out, central = io.BytesIO(), io.BytesIO()
    for e in entries:
        name = e["name"].encode()
        csize = e.get("compress_size", len(e["data"]))
        offset = out.tell()
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, e.get("flags", 0), e.get("method", 0), 0, 0,
                              e.get("crc", 0), csize, e["file_size"], len(name), 0) + name + e["data"])
        central.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, e.get("flags", 0), e.get("method", 0), 0, 0,
                                  e.get("crc", 0), csize, e["file_size"], len(name), 0, 0, 0, 0, 0, offset) + name)
    cd = central.getvalue()
    first = entries[0]
    count = first.get("eocd_entries", len(entries))
    size = first.get("eocd_size", len(cd))
    return out.getvalue() + cd + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF),
                                             min(count, 0xFFFF), size, out.tell(), 0)


def zip_entry(name: str, body: bytes, **claims) -> dict:
    """An honest deflated entry (claims may then override file_size, crc...)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = c.compress(body) + c.flush()
    return {"name": name, "data": data, "method": 8, "crc": zlib.crc32(body), "file_size": len(body), **claims}


def honest_wheel_entries(version: str = "0.19.2", base: str = "0.19.2") -> list[dict]:
    return [zip_entry(f"megatron_core-{version}.dist-info/METADATA", metadata(version).encode()),
            zip_entry(DDP_PATH, config_source(base).encode()),
            zip_entry(OPTIMIZER_PATH, config_source(base, optimizer=True).encode()),
            *(zip_entry(path, body.encode()) for path, body in model_config_files(base).items())]


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk space."""
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def xz_demanding_dictionary(data: bytes, props: int = 40) -> bytes:
    """``data`` as .xz whose LZMA2 filter asks the decoder for a huge dictionary (props 40: 4 GiB - 1), made by
    patching one byte of the block header and its CRC32 (compressing with such a dictionary would take GiBs)."""
    import lzma

    xz = bytearray(lzma.compress(data, format=lzma.FORMAT_XZ))
    start = 12  # after the stream header
    size = (xz[start] + 1) * 4
    flags, at = xz[start + 1], start + 2

    def skip_vli(i: int) -> int:
        while xz[i] & 0x80:
            i += 1
        return i + 1

    if flags & 0x40:  # compressed size present
        at = skip_vli(at)
    if flags & 0x80:  # uncompressed size present
        at = skip_vli(at)
    assert xz[at] == 0x21 and xz[at + 1] == 1, "expected one LZMA2 filter with one property byte"
    xz[at + 2] = props
    xz[start + size - 4:start + size] = struct.pack("<I", zlib.crc32(bytes(xz[start:start + size - 4])))
    return bytes(xz)


def _with_checksum(block: bytearray) -> bytes:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def gnu_sparse_bomb(mib: int = 300) -> bytes:
    """A gzip'd tar whose first header is an old-GNU sparse member with an endless chain of extension blocks, each
    holding 21 (offset, size) pairs that tarfile collects into a list while reading headers."""
    info = tarfile.TarInfo("megatron_core-0.20.0/sparse")
    info.type = tarfile.GNUTYPE_SPARSE
    head = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    head[482] = 1  # isextended
    one = b"%011o\0" % 1
    ext = bytearray((one + one) * 21 + bytes(8))
    ext[504] = 1  # another extension block follows, forever
    chunk = bytes(ext) * (MIB // 512)
    return gzip_of_deflate(_pieces(_with_checksum(head), chunk, mib))


def pax_sparse_map_bomb(mib: int = 300) -> bytes:
    """A gzip'd tar with a pax GNU.sparse 1.0 member whose map claims 10^9 numbers: tarfile reads them into a list
    before the member, whatever the member's declared size."""
    info = tarfile.TarInfo("megatron_core-0.20.0/sparse")
    info.size = 512
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "sparse",
                        "GNU.sparse.realsize": "1"}
    head = info.tobuf(format=tarfile.PAX_FORMAT) + b"1000000000\n"
    return gzip_of_deflate(_pieces(head, b"1\n" * (MIB // 2), mib))


def _pieces(head: bytes, chunk: bytes, count: int) -> bytes:
    """A raw deflate stream of ``head`` + ``chunk`` * ``count``, compressing ``chunk`` once."""
    def piece(data: bytes) -> bytes:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush(zlib.Z_FULL_FLUSH)

    return piece(head) + piece(chunk) * count + zlib.compressobj(9, zlib.DEFLATED, -15).flush()


# ------------------------------------------------------------------------------------ hostile inputs: parsing, archives, messages
def flipped_config(version: str = "0.19.2") -> str:
    """The registry's DDPConfig of ``version`` with one default flipped (a real break the gate must see)."""
    source = config_source(version)
    assert "    grad_reduce_in_fp32: bool = False\n" in source
    return source.replace("    grad_reduce_in_fp32: bool = False\n", "    grad_reduce_in_fp32: bool = True\n")


def duplicate_member_wheel(path: Path, version: str = "0.20.0") -> Path:
    """The real config first, a flipped default last, under one member name (an installer keeps the last)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns "Duplicate name" and writes it anyway
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"megatron_core-{version}.dist-info/METADATA", metadata(version))
            z.writestr(DDP_PATH, config_source())
            z.writestr(OPTIMIZER_PATH, config_source(optimizer=True))
            z.writestr(DDP_PATH, flipped_config())
    return path


def decoy_sdist_members(version: str = "0.20.0", decoy_prefix: str = "") -> list:
    """An sdist whose project directory holds the flipped config, plus a decoy package with the registry's
    config at ``decoy_prefix`` (shorter than the project directory)."""
    real = f"megatron_core-{version}/"
    return [tar_member(real + "PKG-INFO", metadata(version).encode()),
            tar_member(real + DDP_PATH, flipped_config().encode()),
            tar_member(real + OPTIMIZER_PATH, config_source(optimizer=True).encode()),
            tar_member(decoy_prefix + DDP_PATH, config_source().encode()),
            tar_member(decoy_prefix + OPTIMIZER_PATH, config_source(optimizer=True).encode())]


def dataclass_with_check(test: str, annotation: str = "int", default: str = "1") -> str:
    """A one-field dataclass C whose ``__post_init__`` asserts ``test`` (with an f-string message)."""
    return (f"from dataclasses import dataclass\n@dataclass\nclass C:\n    x: {annotation} = {default}\n"
            f"    def __post_init__(self):\n        assert {test}, f'x is {{self.x!r}}'\n")


def precheck_outcome(source: str, value: str) -> dict:
    """The pre-check of class ``C`` in ``source`` on ``x`` = the expression ``value``: whether it fires, the
    evaluated / not-evaluated counts and the message; PRECHECK_PROGRAM prints the same from a child."""
    from compat import precheck
    from compat.effective import post_init_values
    from compat.registry import schema_from_snapshot
    from compat.tooling.extract import extract_class

    schema = schema_from_snapshot("0.99.0", "candidate", extract_class(source, "C"), config="ddp")
    env = post_init_values(schema, {"x": eval(value)})  # a literal expression of the test's, e.g. 10 ** 1000
    found, counts = precheck.run(schema, env)
    message = str(precheck.error_for(found, env, schema)) if found else None
    return {"fires": found is not None, **counts, "message": message}


# In a child, for checks that would take gigabytes if the evaluator's caps failed (the child's peak memory is read).
PRECHECK_PROGRAM = ("import json\n"  # hostile_inputs from tests/unit: on the child's PYTHONPATH (child_pythonpath)
                    "from hostile_inputs import precheck_outcome\n"
                    "print(json.dumps(precheck_outcome({source!r}, {value!r})))\n")
