# SPDX-License-Identifier: Apache-2.0
"""Companions: the packages that ride on megatron-core (Megatron-Bridge, Megatron-FSDP, ModelOpt, mbridge).

Which of their releases work with which pinned megatron-core: the surface gate reads each release's wheel as the
project (read as data, never imported) against every pin (``window.companion_window``); what installing the pair
on CPU did is recorded data beside it (``catalog.recorded_installs``). ``cli`` is ``mcore-compat window``."""
