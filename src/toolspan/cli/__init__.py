"""The ``toolspan`` command: ``convert``, ``audit``, ``fetch``, ``find`` and ``serve``."""

from __future__ import annotations

from toolspan.cli._main import main

__all__ = ["main"]
