# SPDX-License-Identifier: Apache-2.0
"""``python -m compat``: explain, fields, registry refresh (and gate, vendor). Exit 0 ok, 2 usage, 3 CompatError."""
from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import sys
from pathlib import Path

from ..errors import CompatError, cli_command, one_line

MAX_FROM_BYTES = 1 << 20  # an --from file: a JSON object of config fields


class _UsageError(Exception):
    """Bad arguments found after parsing: exit 2, one line."""


def _finite(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is not a finite number")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON value (NaN and Infinity are refused)")


def _no_duplicates(pairs: list) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} is given more than once")
        out[key] = value
    return out


def strict_json(text: str):
    """json.loads, refusing duplicate keys, NaN, Infinity and numbers that overflow to infinity (ValueError)."""
    return json.loads(text, parse_float=_finite, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)


def _parse_set(text: str) -> tuple[str, object]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--set expects key=value, got {one_line(text, 200)!r}")
    try:
        return key.strip(), strict_json(raw)
    except json.JSONDecodeError:
        return key.strip(), raw  # bare words such as optim_grads are strings
    except ValueError as exc:  # a RecursionError goes on to main: exit 3, "too deeply nested"
        raise argparse.ArgumentTypeError(f"--set {one_line(key, 200)!r}: {one_line(exc, 300)}") from None


CONFIG_CHOICES = ("ddp", "optimizer", "adam_optimizer", "sgd_optimizer", "transformer", "mla")
_OPTIMIZER_FLAGS = ("optimizer", "precision_aware", "main_grads_dtype", "layer_wise")


def _optimizer_from(args) -> dict | None:
    if not (args.optimizer or args.precision_aware or args.main_grads_dtype or args.layer_wise):
        return None
    return {"optimizer": args.optimizer or "adam", "use_precision_aware_optimizer": args.precision_aware,
            "main_grads_dtype": args.main_grads_dtype or "fp32",
            "use_layer_wise_distributed_optimizer": args.layer_wise}


def _overrides(args, parser) -> dict:
    """--from FILE (a JSON object) under --set k=v; a key given twice with --set is a usage error."""
    out: dict = {}
    if args.from_file:
        out.update(_from_file(args.from_file))
    seen = set()
    for key, value in args.set or []:
        if key in seen:
            raise _UsageError(f"--set {one_line(key, 200)} is given more than once")
        seen.add(key)
        out[key] = value
    return out


def _from_file(path: str) -> dict:
    """--from FILE: a bounded read of a regular file (never a FIFO or a device), strict JSON, an object."""
    from .archive import read_file

    try:
        data = strict_json(read_file(path, MAX_FROM_BYTES, "--from file", error=_UsageError).decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _UsageError(f"--from {one_line(path, 200)!r}: {one_line(exc, 300)}") from None
    if not isinstance(data, dict):
        raise _UsageError(f"--from {one_line(path, 200)!r}: expected a JSON object of config fields")
    return data


def _print(obj, as_json: bool, text: str):
    print(json.dumps(obj, indent=1, default=str) if as_json else text)


def cmd_explain(args) -> int:
    from ..configs import CONFIGS, config_class
    from ..resolution import resolve

    takes_optimizer = config_class(args.config).takes_optimizer
    if not takes_optimizer and any(getattr(args, f) for f in _OPTIMIZER_FLAGS):
        which = " or ".join(f"--config {k}" for k, c in CONFIGS.items() if c.takes_optimizer)
        args.parser.error(f"--optimizer/--precision-aware/--main-grads-dtype/--layer-wise apply to {which} only")
    res = resolve(_overrides(args, args.parser), _optimizer_from(args) if takes_optimizer else None,
                  args.mcore, config=args.config, lenient=args.lenient)
    rows = [f"megatron-core {res.version} {res.class_name} ({res.schema_source}, {res.match})"]
    rows += [f"note: {w}" for w in res.warnings]
    width = max(len(n) for n in res.fields)
    for name, f in res.fields.items():
        called = "" if f.target_name in (name, None) else f"  (as {f.target_name})"
        why = f" [{f.rule}]" if f.rule else (f" [given as {', '.join(f.given_as)}]" if f.given_as != (name,) and f.given_as else "")
        rows.append(f"{name:<{width}}  {f.value!r:<14} {f.source}{called}{why}")
    if res.prechecks.get("checks"):
        rows.append(f"__post_init__ checks: {res.prechecks['checks']}, pre-checked {res.prechecks.get('evaluated', 0)}"
                    f" (the rest need values or code the pre-check does not evaluate)")
    rows.append("kwargs: " + json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in res.kwargs.items()},
                                        default=repr))
    _print(res.to_dict(), args.json, "\n".join(rows))
    return 0


def cmd_fields(args) -> int:
    from ..resolution import target_schema

    schema, _how, notes = target_schema(args.mcore, config=args.config)
    data = {"config": args.config, "class": schema.class_name, "bases": list(schema.bases), "version": schema.version,
            "fields": [{"name": f.name, "annotation": f.annotation, "default": f.default_text, "doc": f.doc,
                        "owner": f.owner} for f in schema.fields],
            "post_init_reads": sorted(schema.post_init_reads), "post_init_writes": sorted(schema.post_init_writes),
            "checks": [{"where": c.where(), "kind": c.kind, "exception": c.exception, "when": list(c.when),
                        "test": c.test, "message": c.message, "pre_checked": c.skip is None, "skip": c.skip}
                       for c in schema.checks], "notes": notes}
    checked = sum(1 for c in schema.checks if c.skip is None)
    text = "\n".join([f"megatron-core {schema.version} {schema.class_name}: {len(schema.fields)} fields, "
                      f"{len(schema.checks)} __post_init__ checks ({checked} pre-checked)"] +
                     [f"  {f.name}: {f.annotation} = {f.default_text}" for f in schema.fields])
    _print(data, args.json, text)
    return 0


def cmd_registry_refresh(args) -> int:
    from ..registry import load_json
    from . import refresh

    out = Path(args.out) if args.out else Path(__file__).resolve().parents[1] / "data" / "registry.json"
    versions = None
    if args.only_known:  # the releases it lists, read without its format: refreshing is how a format changes
        versions = {r["version"]: r["yanked"] for r in load_json("registry.json")["releases"]}
    log = (lambda _msg: None) if args.json else (lambda msg: print(msg, file=sys.stderr))
    result = refresh.refresh(out, versions, log=log)
    summary = {"out": str(out), "releases": len(result["releases"]), "snapshots": len(result["snapshots"]),
               "fields": len(result["fields"]), "checks": len(result["checks"]), "bytes": out.stat().st_size}
    _print(summary, args.json, f"wrote {out}: {summary['releases']} releases, {summary['snapshots']} class "
                               f"snapshots, {summary['fields']} field records, {summary['checks']} checks, "
                               f"{summary['bytes']} bytes")
    return 0


def register_explain(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", choices=CONFIG_CHOICES, default="ddp", help="which config class (default: ddp)")
    p.add_argument("--mcore", help="target version (default: installed, else the newest in the registry)")
    p.add_argument("--set", action="append", type=_parse_set, metavar="KEY=VALUE", help="an override (JSON value)")
    p.add_argument("--from", dest="from_file", metavar="FILE", help="overrides from a JSON object (--set wins)")
    p.add_argument("--optimizer", help="optimizer name (adam, sgd, muon); any optimizer flag enables the resolver")
    p.add_argument("--precision-aware", action="store_true", help="use_precision_aware_optimizer=True")
    p.add_argument("--main-grads-dtype", help="main_grads_dtype (fp32, bf16, ...)")
    p.add_argument("--layer-wise", action="store_true", help="use_layer_wise_distributed_optimizer=True")
    p.add_argument("--lenient", action="store_true", help="drop unsupported fields (reported) instead of failing")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_explain, parser=p)


def register_fields(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", choices=CONFIG_CHOICES, default="ddp", help="which config class (default: ddp)")
    p.add_argument("--mcore", help="version (default: installed, else the newest in the registry)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fields)


def register_registry(p: argparse.ArgumentParser) -> None:
    reg_sub = p.add_subparsers(dest="registry_command", required=True)
    r = reg_sub.add_parser("refresh", help="download every release >= 0.7.0 and re-extract the registry")
    r.add_argument("--out", help="where to write (default: the package's data/registry.json)")
    r.add_argument("--only-known", action="store_true", help="re-extract exactly the releases already registered")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_registry_refresh)


class Command:
    """A command of the table below (a plain class: typing.NamedTuple would cost every command ~4 ms of imports)."""

    def __init__(self, module: str, register: str, help: str, *, takes_matrix_tools: bool = False):
        self.module = module  # relative to this package; imported only when the command runs or prints --help
        self.register = register  # the module's function that adds the command's arguments to its parser
        self.help = help  # the line `--help` lists, kept here so that listing the commands imports none of them
        self.takes_matrix_tools = takes_matrix_tools  # register(parser, matrix_tools): see main


# The commands, in the order --help lists them (the gate's modules alone cost ~40 ms to import).
COMMANDS: dict[str, Command] = {
    "explain": Command(".cli", "register_explain",
                       "every field of a config: value, source and the name the version uses"),
    "fields": Command(".cli", "register_fields",
                      "list a version's fields of a config class (and its __post_init__ checks)"),
    "registry": Command(".cli", "register_registry", "maintain the registry"),
    "vendor": Command(".vendor", "register", "copy compat into a host project; --check reports drift (exit 1)"),
    "gate": Command(".gate.cli", "register",
                    "review a megatron-core release, wheel, sdist or checkout against the registry",
                    takes_matrix_tools=True),
    "window": Command(".gate.companions.cli", "register",
                      "which releases of a companion (megatron-bridge, ...) work with which pinned megatron-core"),
}


def build_parser(command: str | None = None, matrix_tools=None) -> argparse.ArgumentParser:
    """The whole parser, or with ``command`` (the first argument) only that command's arguments: the others are
    listed by name and help line, and their modules are not imported."""
    parser = argparse.ArgumentParser(prog=cli_command("").rstrip(), description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, spec in COMMANDS.items():
        p = sub.add_parser(name, help=spec.help)
        if command is None or command == name:
            register = getattr(importlib.import_module(spec.module, __package__), spec.register)
            if spec.takes_matrix_tools:
                register(p, matrix_tools)
            else:
                register(p)
    return parser


TRACEBACK_ENV = "MCORE_COMPAT_TRACEBACK"  # set to 1 to see the traceback of an internal error


def _usage(message: str) -> int:
    """Exit 2: a usage error found after parsing, in one line."""
    return _say("usage error", message, 2)


def _error(message: str) -> int:
    """Exit 3: one line on stderr, whatever the message holds (newlines, ANSI escapes, a megabyte of text)."""
    return _say("error", message, 3)


def _say(prefix: str, message: str, code: int) -> int:
    try:
        if sys.stderr is not None:
            print(f"{prefix}: {one_line(message)}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # stderr is gone too: the exit code is all that is left
    return code


class _StdoutFailed(Exception):
    def __init__(self, error: OSError):
        super().__init__(error)
        self.error = error


class _GuardedStdout:
    """sys.stdout for the length of a command: a failed write or flush is told apart from every other OSError."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise _StdoutFailed(exc) from None

    def flush(self):
        try:
            return self._stream.flush()
        except OSError as exc:
            raise _StdoutFailed(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    """After stdout failed (a closed pipe, a full disk), point its descriptor at devnull so that the interpreter's
    final flush cannot fail again (the recipe of https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


def _tolerant_streams() -> None:
    """Text that cannot be encoded (a candidate's doc on an ASCII terminal) is escaped, not a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
            pass


def _run(argv, matrix_tools) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv else "", matrix_tools).parse_args(argv)  # "": no command's module
    if sys.stdout is None:  # started with stdout closed (`>&-`): the output would vanish silently
        return _error("stdout is closed; nothing was done (redirect it to a file or /dev/null instead)")
    real = sys.stdout
    sys.stdout = _GuardedStdout(real)
    try:
        code = args.func(args)
        sys.stdout.flush()
        return code
    finally:
        sys.stdout = real


def main(argv: list[str] | None = None, *, matrix_tools=None) -> int:
    """Exit codes: 0 ok, 1 drift / review needed, 2 usage, 3 the command could not be carried out (one line on
    stderr, never a traceback). ``matrix_tools``: see ``gate.cli.register`` (tools/matrix.py passes its own)."""
    _tolerant_streams()
    try:
        return _run(argv, matrix_tools)
    except _UsageError as exc:
        return _usage(str(exc))
    except CompatError as exc:
        return _error(str(exc))
    except _StdoutFailed as failed:
        _silence_stdout()
        if isinstance(failed.error, BrokenPipeError):
            return _error("stdout was closed before all output was written (broken pipe)")
        return _error(f"cannot write to stdout: {failed.error.strerror or failed.error}")
    except OSError as exc:
        where = f" {str(exc.filename)!r}" + (f" -> {str(exc.filename2)!r}" if exc.filename2 else "")
        return _error(f"cannot access{where if exc.filename else ''}: {exc.strerror or exc}")
    except (RecursionError, MemoryError) as exc:
        return _error(f"input too deeply nested or too large to process ({type(exc).__name__})")
    except Exception as exc:  # noqa: BLE001  a bug, reported in one line like everything else
        if os.environ.get(TRACEBACK_ENV):
            raise
        return _error(f"internal error, please report it: {type(exc).__name__}: {exc} "
                      f"(set {TRACEBACK_ENV}=1 to see the traceback)")
