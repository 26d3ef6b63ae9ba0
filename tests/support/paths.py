"""Where the tests' data and child applications are: one place, so a test file can move without its paths."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
APPS = TESTS / "apps"
