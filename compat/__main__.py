# SPDX-License-Identifier: Apache-2.0
import sys

from .tooling.cli import main

sys.exit(main())
