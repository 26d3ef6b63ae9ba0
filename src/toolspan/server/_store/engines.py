"""Which engine holds a store: ``open_store`` picks it from ``--db``. A ``postgresql://`` (or ``postgres://``)
URL opens the PostgreSQL store (``toolspan[postgres]``), anything else is an SQLite file."""

from __future__ import annotations

from toolspan.server._store.api import StoreApi, is_postgres_url
from toolspan.server._store.sqlite import SqliteStore

__all__ = ["open_store"]


def open_store(db: str) -> StoreApi:
    """The store ``db`` names (``StoreError`` when it cannot serve)."""
    if is_postgres_url(db):
        from toolspan.server._store.postgres import PostgresStore  # psycopg only for such a URL

        return PostgresStore(db)
    return SqliteStore(db)
