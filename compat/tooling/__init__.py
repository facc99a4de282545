# SPDX-License-Identifier: Apache-2.0
"""The tooling: what maintainers run, never a training job (the gate, the surface gate, the downloader, the
registry refresh, vendoring and the CLI). It depends on the runtime package above it, never the other way round;
``vendor`` copies the runtime only."""
