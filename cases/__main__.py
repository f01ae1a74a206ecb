"""``python -m cases``: the golden case files (the command lives in conformance.cli.cases)."""

import sys

from conformance.cli.cases import main

if __name__ == "__main__":
    sys.exit(main())
