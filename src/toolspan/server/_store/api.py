"""What the layers above use of a store, whichever engine holds it: its storage (``StoreApi``: the one
interface, ``storage.Storage``, which both engines implement), its change feed (``ChangeFeed``: how the
replicas sharing a store tell each other of commits, text deltas and decisions), and its control rows
(``control.ControlRows``); and how a store's address is shown."""

from __future__ import annotations

from typing import TypeAlias

from toolspan.server._store.changes import ChangeFeed
from toolspan.server._store.storage import Storage

__all__ = ["ChangeFeed", "StoreApi", "is_postgres_url", "shown"]


def is_postgres_url(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def shown(db: str) -> str:
    """``db`` as the banner and the logs show it: a URL's password replaced by ``***``."""
    if not is_postgres_url(db):
        return db
    scheme, _, rest = db.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return db
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"


# The one store API: ``Storage``, which both engines implement (``sqlite.SqliteStore`` on SQLite,
# ``postgres.PostgresStore`` on PostgreSQL); a method is written there once, for both.
StoreApi: TypeAlias = Storage
