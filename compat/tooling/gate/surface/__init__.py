# SPDX-License-Identifier: Apache-2.0
"""The surface gate: what a megatron-core candidate breaks in a project's own code, file and line.

The candidate: ``model`` (its ``megatron`` package as data, built with ``ast``), ``lazy_model`` (built module by
module as lookups reach it), ``cache`` (one model per wheel sha256), ``lookup`` (names and signatures in a model),
``conditions`` (keywords it passes only under a condition). The project: ``project`` (every use of megatron, with
its guards: the files and the rounds over them), ``scanner`` (one file's scan: scopes, bindings, imports, guards),
``bindings`` (what one scope binds), ``scopes`` (the scanner's frames), ``branch_guards`` (what a conditional
guards), ``detectors`` (what is a use, one module per rule family), ``rule`` (how a detector describes itself),
``uses`` (the record of one use), ``definitions`` (what a file defines: functions, methods, classes),
``reexports`` (classes named through another module), ``whole_project`` (the deferred phase, once every file
is scanned), ``scan_cache`` and ``pool`` (warm and parallel scans), ``spelling`` and ``line_starts`` (which lines
can matter), ``kinds`` (finding and guard kinds), ``guards``, ``fallbacks`` and ``swallowed`` (what protects a use),
``switched_off`` (what a feature an ImportError handler turns off takes with it), ``instances``, ``annotated`` and
``project_classes`` (what a name holds), ``splats``, ``forwarding`` and ``providers`` (keywords and callbacks that
reach megatron through the project). Together: ``check`` (uses x model -> findings), ``overrides`` (project
subclasses and replacements against megatron's calls), ``release_gate`` (one candidate, with history),
``window`` (a range of releases), ``report`` (markdown), ``cli``. docs/architecture.md lists each module with its
summary.
"""
