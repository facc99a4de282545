# SPDX-License-Identifier: Apache-2.0
"""The surface gate: what a megatron-core candidate breaks in a project's own code, file and line.

``model`` (the candidate's ``megatron`` package as data, built with ``ast``), ``cache`` (one model per wheel
sha256), ``lookup`` (resolve names and signatures in a model), ``project`` (every use of megatron in a project,
with its guards; ``guards`` classifies them), ``check`` (uses x model -> findings), ``core`` (one candidate, with
history from the cached releases), ``window`` (a range of releases), ``report`` (markdown), ``cli``.
"""
