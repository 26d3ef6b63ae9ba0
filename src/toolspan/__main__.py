"""``python -m toolspan``: the ``toolspan`` command."""

from __future__ import annotations

import sys

from toolspan.cli import main

if __name__ == "__main__":
    sys.exit(main())
