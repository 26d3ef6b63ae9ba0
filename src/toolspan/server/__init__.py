"""``toolspan serve``: receive OTLP, keep spans in SQLite (or PostgreSQL), serve every bridge format over
HTTP and SSE.

Needs the ``server`` extra (in a checkout: ``pip install '.[server]'``; Starlette + uvicorn for HTTP/SSE,
grpcio for OTLP/gRPC). ``build_app`` gives the ASGI application (to mount elsewhere or test) and the
``ServerHandlers`` behind it (the server's state and request handlers); ``serve`` serves until a signal.
The package is layered as ingest (``_ingest``: OTLP bodies to rows), store (``_store``: SQLite and
PostgreSQL, summaries, remote reads), streams (``_streams``: SSE, cursors, text deltas) and HTTP
(``_http``: the application, routes, pages, OpenAPI, serving); names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolspan._util.lazy import lazy

if TYPE_CHECKING:
    from toolspan.server._http.app import ServerHandlers, build_app
    from toolspan.server._http.config import ServerConfig
    from toolspan.server._http.serve import serve
    from toolspan.server._store.api import StoreApi, open_store
    from toolspan.server._store.db import Cursor, Store

__all__ = [
    "Cursor",
    "ServerConfig",
    "ServerHandlers",
    "Store",
    "StoreApi",
    "build_app",
    "open_store",
    "serve",
]

_WHERE: dict[str, str | tuple[str, str]] = {
    "ServerHandlers": "toolspan.server._http.app",
    "build_app": "toolspan.server._http.app",
    "ServerConfig": "toolspan.server._http.config",
    "serve": "toolspan.server._http.serve",
    "Cursor": "toolspan.server._store.db",
    "Store": "toolspan.server._store.db",
    "StoreApi": "toolspan.server._store.api",
    "open_store": "toolspan.server._store.api",
}


__getattr__, __dir__ = lazy(globals(), _WHERE)
