# SPDX-License-Identifier: Apache-2.0
"""``python -m compat``: the command line (compat/tooling/cli.py); not part of a vendored copy."""
import sys

from .tooling.cli import main

sys.exit(main())
