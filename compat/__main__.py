import sys

from .tooling.cli import main

sys.exit(main())
