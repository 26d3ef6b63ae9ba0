"""A route of the server and what its OpenAPI description says of it (``Endpoint``): the rows of the one table
of routes (``registry.ROUTES``), from which the application and the OpenAPI document are both built."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from toolspan.server._http.auth import PUBLIC, READ
from toolspan.server._http.state import ServerState

__all__ = ["HTML", "JSON", "LINES", "SSE", "Endpoint", "Handler", "query"]

JSON: Final = "application/json"
LINES: Final = "application/x-ndjson"
SSE: Final = "text/event-stream"
HTML: Final = "text/html"
_CONVERTOR: Final = re.compile(r"\{(\w+):\w+\}")
_PARAM: Final = re.compile(r"\{(\w+)")
_UNKNOWN_ID: Final = "unknown id: {error, status}"
# What every route may answer besides its own (``Endpoint.answers``).
_HOST_OR_TOKEN: Final = "a Host this server does not serve, or a token that may not do this: {error, status}"
_NO_TOKEN: Final = "no token, or a wrong one: {error, status}"
_THROTTLED: Final = "too many wrong tokens from this address: Retry-After, {error, status, retry_after_s}"
_BAD_PARAMETER: Final = "a parameter that is not what it says (the error names it): {error, status}"
_BAD_RESUME: Final = (
    "a resume point (Last-Event-ID, ?cursor= or ?since=) this stream did not give: {error, status}"
)

# A route's handler: the server's state and the request in, the response out.
Handler = Callable[[ServerState, Request], Awaitable[Response]]


def query(name: str, schema: Mapping[str, Any] | None = None, *, required: bool = False) -> dict[str, Any]:
    """An OpenAPI query parameter (a string unless ``schema`` says otherwise)."""
    return {"name": name, "in": "query", "required": required, "schema": dict(schema or {"type": "string"})}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One route: where (``path``, as Starlette matches it, and ``method``), its handler, what the request's
    token needs (``auth``: ``READ`` unless said; a ``DECIDE`` route is read, then checked by ``decider``),
    whether it is an HTML page (served without its data to a browser without the token), and its OpenAPI
    operation: ``summary``, what a 200 holds (``media``; ``None``: no body described), the other answers
    (``responses``, status to description; ``None``: 200 and a 404 for an unknown id), ``params`` beyond the
    path's, and the JSON Schema of a request ``body``."""

    path: str
    method: str
    handler: Handler
    summary: str
    media: str | None = JSON
    responses: Mapping[str, str] | None = None
    params: tuple[Mapping[str, Any], ...] = ()
    body: Mapping[str, Any] | None = None
    need: str = READ
    page: bool = False

    @property
    def documented_path(self) -> str:
        """The path as OpenAPI writes it (``{trace_id}``)."""
        return _CONVERTOR.sub(r"{\1}", self.path)

    @property
    def path_params(self) -> list[str]:
        return _PARAM.findall(self.path)

    @property
    def answers(self) -> dict[str, str]:
        """Every status this route answers, with what it means: its own (``responses``; by default 200 and a
        404 for an unknown id), a 400 for a parameter it checks or a stream's resume point, and what every
        route answers alike (403; 401 and 429 where a token is needed: a page is served without its data
        instead of a 401)."""
        found = dict(self.responses or {"200": "OK", **({"404": _UNKNOWN_ID} if self.path_params else {})})
        if self.media == SSE:
            found.setdefault("400", _BAD_RESUME)
        elif self.params:
            found.setdefault("400", _BAD_PARAMETER)
        found.setdefault("403", _HOST_OR_TOKEN)
        if self.need != PUBLIC:
            if not self.page:
                found.setdefault("401", _NO_TOKEN)
            found.setdefault("429", _THROTTLED)
        return dict(sorted(found.items()))
