# SPDX-License-Identifier: Apache-2.0
"""The surface gate: what a megatron-core candidate breaks in a project's own code, file and line.

The candidate: ``model`` (its ``megatron`` package as data, built with ``ast``), ``lazy_model`` (built module by
module as lookups reach it), ``cache`` (one model per wheel sha256), ``lookup`` (names and signatures in a model),
``conditions`` (keywords it passes only under a condition). The project: ``project`` (every use of megatron, with
its guards), ``scan_cache`` and ``pool`` (warm and parallel scans), ``spelling`` and ``line_starts`` (which lines
can matter), ``kinds`` (finding and guard kinds), ``guards``, ``fallbacks`` and ``swallowed`` (what protects a use),
``switched_off`` (what a feature an ImportError handler turns off takes with it), ``instances``, ``annotated`` and
``project_classes`` (what a name holds), ``splats``, ``forwarding`` and ``providers`` (keywords and callbacks that
reach megatron through the project). Together: ``check`` (uses x model -> findings), ``overrides`` (project
subclasses and replacements against megatron's calls), ``release_gate`` (one candidate, with history),
``window`` (a range of releases), ``report`` (markdown), ``cli``. docs/architecture.md lists each module with its
summary.
"""
