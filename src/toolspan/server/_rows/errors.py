"""The errors of a store that the layers above it answer: one that cannot serve (``toolspan serve`` exits),
one that cannot answer now (a retryable 503)."""

from __future__ import annotations

import sqlite3
from typing import Final

from toolspan.errors import ToolspanError

__all__ = ["STORE_BUSY", "StoreError", "StoreUnavailable"]


class StoreError(ToolspanError):
    """The database cannot serve as the store: a one-line reason (``toolspan serve`` exits with it)."""


class StoreUnavailable(ToolspanError):
    """The database cannot answer now (a restart, a lost connection): the request may be retried."""


# What a store raises when it cannot take or answer a request now (a full disk, an I/O error, a locked or
# damaged SQLite file; PostgreSQL down): a retryable 503, UNAVAILABLE on gRPC, a stream its client resumes.
STORE_BUSY: Final = (sqlite3.Error, StoreUnavailable)
