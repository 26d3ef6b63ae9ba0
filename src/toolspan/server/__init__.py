"""``toolspan serve``: receive OTLP, keep spans in SQLite (or PostgreSQL), serve every bridge format over
HTTP and SSE.

Needs the ``server`` extra (in a checkout: ``pip install '.[server]'``; Starlette + uvicorn for HTTP/SSE,
grpcio for OTLP/gRPC). ``build_app`` gives the ASGI application (to mount elsewhere or test) and the
``ServerState`` behind it (what its routes share); ``serve`` serves until a signal; ``open_store`` opens the
store ``--db`` names (``SqliteStore`` on SQLite). Names load on first use.

The package is layered, each layer importing only those below it (``pyproject.toml``'s contracts):
HTTP (``_http``: the table of routes, a module per resource, the state, auth, serving), streams
(``_streams``: SSE, the event log's and the views' live streams, text deltas), ingest (``_ingest``: OTLP
bodies to rows), the store (``_store``: one storage and one SQL for SQLite and PostgreSQL, change feeds,
control rows) and rows (``_rows``: the row model, cursors and errors every layer shares).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolspan._util.lazy import lazy

if TYPE_CHECKING:
    from toolspan.server._http.app import build_app
    from toolspan.server._http.config import ServerConfig
    from toolspan.server._http.serve import serve
    from toolspan.server._http.state import ServerState
    from toolspan.server._rows.cursor import Cursor
    from toolspan.server._store.api import StoreApi
    from toolspan.server._store.engines import open_store
    from toolspan.server._store.sqlite import SqliteStore

__all__ = [
    "Cursor",
    "ServerConfig",
    "ServerState",
    "SqliteStore",
    "StoreApi",
    "build_app",
    "open_store",
    "serve",
]

_WHERE: dict[str, str | tuple[str, str]] = {
    "build_app": "toolspan.server._http.app",
    "ServerConfig": "toolspan.server._http.config",
    "serve": "toolspan.server._http.serve",
    "ServerState": "toolspan.server._http.state",
    "Cursor": "toolspan.server._rows.cursor",
    "StoreApi": "toolspan.server._store.api",
    "open_store": "toolspan.server._store.engines",
    "SqliteStore": "toolspan.server._store.sqlite",
}


__getattr__, __dir__ = lazy(globals(), _WHERE)
