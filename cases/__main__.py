"""``python -m cases``: the golden case files (the command lives in conformance.cli.cases).

The current directory is already off ``sys.path`` when this runs (``cases/__init__.py`` says why)."""

import sys

from conformance.cli.cases import main

if __name__ == "__main__":
    sys.exit(main())
