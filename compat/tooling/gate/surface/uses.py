# SPDX-License-Identifier: Apache-2.0
"""What the project scan records: one ``Use`` of megatron in a project's file, at a line, with its guards.

A use is an import (module or name), an attribute chain off an imported name or module alias, a call of an
imported callable or class, a ``getattr``/``hasattr`` probe, a method override, a replacement or a spec: each
detector under ``detectors/`` says which it makes (``detectors.rules()``).
"""
from __future__ import annotations

from dataclasses import dataclass

SELF_ATTRIBUTE = "self attribute"  # ``self.X`` that only a megatron base class can have set
SUPER_AFTER = "super(Base).__init__"  # the call goes to the class after the named one in its MRO


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    name: str  # dotted megatron name
    how: str  # module | import | attribute | call | probe
    guards: tuple = ()
    alternatives: tuple = ()  # other megatron names the same binding may denote (try/except imports)
    keywords: tuple = ()
    keyword_lines: tuple = ()  # the line of each keyword (a call may span many lines)
    positional: int | None = None  # None: a *args splat, or not a call
    splat: bool = False  # a **kwargs splat
    via: str = ""  # super().__init__, functools.partial, getattr default, hasattr
    callables: tuple = ()  # for a call: (slot, the project function's name, its signature, where) for each
    # argument that is a project function (a model provider); slot "0" positional, "=kw" a keyword; where: see
    # providers.py (the def's (path, line), None: at the call, or a reference settled once every file is scanned)
    contract: tuple = ()  # the class contract it stands for: an override's (the project method's signature in
    # model.signature's compact form, every method its class defines: they replace the base's callers); a spec's
    # (its key in the megatron class's submodules, the project class, the keywords build_module adds from the spec:
    # "submodules" and the params' keys; None when the params are not a literal)
    top: bool = False  # runs when the module is imported (in no function body; swallowed.py)
    rule: str = ""  # the detector that recorded it (detectors/<rule>.py, its RULE)

    @property
    def sig(self) -> str:
        return self.contract[0] if self.how == "override" and self.contract else ""

    @property
    def siblings(self) -> tuple:
        return self.contract[1] if self.how == "override" and self.contract else ()

    @property
    def spec(self) -> tuple:
        return self.contract if self.how == "spec" else ()
