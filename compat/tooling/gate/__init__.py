# SPDX-License-Identifier: Apache-2.0
"""The upgrade gate: diff a candidate megatron-core against the registry and classify every change.

``python -m compat gate CANDIDATE`` where CANDIDATE is ``megatron-core==X``, ``latest``, a wheel, an sdist or a
Megatron-LM checkout (the keywords win over a file of that name: write ``./latest`` for a directory named latest).
The candidate is read with ``ast`` (never imported), archives in memory. Exit 0: compatible (informational changes
only); 1: needs review or breaking; 2: usage; 3: the candidate could not be read.

With ``--project PATH`` it is the surface gate instead: every use of megatron in PATH's code checked against the
candidate, file and line (``--against V``: set apart what already fails on V; ``--window LOW..HIGH``: every release
in the range, one table). See ``surface``.

Modules: ``cli`` (the command and its exit codes), ``candidate`` (find and read a candidate), ``config_gate``
(diff every config class and build the report), ``diff`` (classify what changed, one path for every class),
``levels`` (what a change means for existing configs), ``policy`` (per-class treatment, as data), ``label`` (the
release a version names, the pin before it), ``metadata`` (Requires-Python and Requires-Dist), ``aliases`` (value
renames), ``blame`` (upstream commits of a checkout), ``sections`` (facts beyond the config diff), ``lanes``,
``ckpt`` and ``training`` (the checkpoint and equivalence lanes' verdicts), ``report`` (markdown),
``registry_file`` and ``accept_pin`` (``--accept``: write the registry, let the caller pin it), ``surface`` (the
surface gate), ``companions`` (packages that ride on megatron-core). docs/architecture.md lists each module with
its summary.
"""
from ...errors import CandidateError  # noqa: F401  (re-exported for callers of the gate)
from .accept_pin import accept  # noqa: F401
from .candidate import GateUsageError, fetch_release, locate, read_candidate  # noqa: F401
from .config_gate import DEFAULT_REGISTRY, GateReport, compare, gate, load_registry, resolve_against  # noqa: F401
from .diff import BREAKING, DDP, DECISION, INFO, LEVELS, Change, diff_config, shim_fields, type_key  # noqa: F401

