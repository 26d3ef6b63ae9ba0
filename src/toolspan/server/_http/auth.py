"""HTTP pieces of ``toolspan serve`` shared by its routes: the JSON error, bearer-token authentication
(``--token``) and the trace id of a path."""

from __future__ import annotations

import base64
import urllib.parse
from typing import Final

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from toolspan.bridge.model import pad_trace_id
from toolspan.server._auth import bearer_token, token_matches

__all__ = ["BearerAuth", "error", "trace_id_param"]

_HEX: Final = frozenset("0123456789abcdef")


def error(status: int, message: str) -> JSONResponse:
    """The server's JSON error: ``{"error": message, "status": status}``."""
    return JSONResponse({"error": message, "status": status}, status_code=status)


class BearerAuth:
    """Refuse requests without ``Authorization: Bearer <token>`` (constant-time compare); ``/healthz``
    and CORS preflights pass. A GET may carry the token as ``?access_token=`` instead: browsers'
    ``EventSource`` cannot set headers."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/healthz" or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = bearer_token(value)
        if not given and scope["method"] == "GET":
            query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = query.get("access_token", [""])[0].encode("latin-1")
        if not token_matches(given, self.token):
            response = error(401, "missing or wrong bearer token")
            response.headers["www-authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def trace_id_param(raw: str) -> str | None:
    """A path's trace id as the bridge spells it (32 lowercase hex), from hex or base64; else ``None``."""
    text = raw.strip().lower()
    if text and len(text) <= 32 and set(text) <= _HEX:
        return pad_trace_id(text)
    try:
        decoded = base64.b64decode(raw, validate=True)
    except ValueError:
        return None
    return decoded.hex() if len(decoded) == 16 else None
