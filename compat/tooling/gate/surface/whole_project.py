# SPDX-License-Identifier: Apache-2.0
"""The project scan's deferred phase: what needs every file scanned first. The files' uses, sets and forwarders
are gathered; the factories of modules not scanned are read; project subclasses of megatron classes become uses
of those classes (project_classes.py), keyword calls of forwarders become calls of their megatron callees
(forwarding.py), and model providers are settled (providers.py).
"""
from __future__ import annotations

from ....errors import CandidateError
from ...pysource import parse_source
from .definitions import module_functions, named_classes, project_callable, project_module
from .forwarding import AMBIGUOUS, PROJECT_CALL, add_forwarder, resolve_project_calls
from .instances import PROJECT_CLASS
from .project_classes import resolve_project_instances
from .providers import defined, file_factories, settle, wanted, wanted_defs


def resolve_whole_project(rounds, reexports, read) -> None:
    """Complete ``rounds.scan`` (project._Rounds, once every round is done); ``reexports``: reexports.Reexports
    of the project; ``read``: project._read (a file read again, within the project's caps)."""
    scan, per_file = rounds.scan, rounds.per_file
    forwards: dict = {}  # forwarding.py: key -> (megatron callee paths, signature), over every file
    for rel, _path in rounds.files:
        done = per_file.get(rel)
        if done is not None and done.uses:
            # uses of project classes and functions alone do not make a file one that uses megatron
            scan.megatron_files += any(u.via not in (PROJECT_CLASS, PROJECT_CALL) for u in done.uses)
            scan.uses.extend(done.uses)
        if done is not None:
            scan.sets |= done.sets
            for key, entry in done.forwarded.items():
                if entry == AMBIGUOUS:
                    forwards[key] = AMBIGUOUS
                else:
                    add_forwarder(forwards, key, *entry)
    _factories_not_scanned(scan, rounds.files, rounds.names_of, per_file, rounds.unparsed, read)
    reexports.alias({u.spec[1] for u in scan.uses if u.spec} | {u.name.rpartition(".")[0] for u in scan.uses
                                                                 if u.via == PROJECT_CLASS}, scan.classes)
    instances = resolve_project_instances(scan.uses, scan.classes, scan.sets, rounds.subclassed)
    scan.uses = settle(resolve_project_calls(instances, forwards, scan.classes), scan.factories, scan.method)


def _factories_not_scanned(scan, files: list, names_of: dict, per_file: dict, unparsed: set, read) -> None:
    """The factories (providers.py) of project modules a provider comes from that were not scanned (they do not
    spell megatron): parsed now, only those."""
    missing = {target.rpartition(".")[0] for target in wanted(scan.uses) if target not in scan.factories}
    # a replacement's def is read wherever it is, scanned file or not (the scan keeps no plain def's line)
    defs: dict = {}
    for target in wanted_defs(scan.uses):
        if target not in scan.factories:
            module, _, name = target.rpartition(".")
            defs.setdefault(module, set()).add(name)
    skipped = {rel for rel, _why in scan.skipped}
    for rel, path in files if missing else ():  # wanted() names the DEF targets too: their modules are in missing
        modules = set(names_of[rel])
        if rel in unparsed or rel in skipped or not missing & modules or (rel in per_file and not set(defs) & modules):
            continue
        data, _total = read(scan, rel, path, 0)
        try:
            tree = parse_source(data, rel) if data is not None else None
        except CandidateError:
            continue
        if tree is None:
            continue
        found = file_factories(tree.body, module_functions(tree.body), project_callable, named_classes(
            tree, *project_module(rel), tuple(scan.own_packages))) if rel not in per_file else {}
        for module in modules:
            scan.factories.update({f"{module}.{name}": (answer, rel) for name, answer in found.items()})
            plain = defined(tree.body, defs.get(module, set()))
            scan.factories.update({f"{module}.{name}": (answer, rel) for name, answer in plain.items()
                                   if f"{module}.{name}" not in scan.factories})
