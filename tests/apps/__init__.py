"""Child applications the tests start as real processes (``python tests/apps/NAME.py ...``), each by its
path."""
