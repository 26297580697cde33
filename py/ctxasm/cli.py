"""The `ctxasm` console script's entry point (py/pyproject.toml names it); the commands are in
ctxasm.interfaces.cli."""

import sys

from ctxasm.interfaces.cli import main

if __name__ == "__main__":
    sys.exit(main())
