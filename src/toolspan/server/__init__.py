"""``toolspan serve``: receive OTLP, keep spans in SQLite, serve every bridge format over HTTP and SSE.

Needs the ``server`` extra (in a checkout: ``pip install '.[server]'``; Starlette + uvicorn for HTTP/SSE,
grpcio for OTLP/gRPC).
``build_app`` gives the ASGI application (to mount elsewhere or test); ``run`` serves until a signal.
"""

from __future__ import annotations

from toolspan.server._app import App, build_app
from toolspan.server._config import ServerConfig
from toolspan.server._run import run
from toolspan.server._store import Cursor, Store

__all__ = ["App", "Cursor", "ServerConfig", "Store", "build_app", "run"]
