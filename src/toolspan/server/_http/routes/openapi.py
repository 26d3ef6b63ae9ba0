"""The OpenAPI 3.1 document of the server (``GET /openapi.json``), written from the table of routes
(``registry.ROUTES``): a path for each route, an operation for each of its methods."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from toolspan.bridge.views import SCHEMA_VERSION
from toolspan.server._http.auth import DECIDE
from toolspan.server._http.endpoints import Endpoint, Handler
from toolspan.server._http.jsonio import JSONResponse
from toolspan.server._http.state import ServerState

__all__ = ["document", "serving"]


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in endpoint.path_params
    ]
    params += [dict(p) for p in endpoint.params]
    operation: dict[str, Any] = {"summary": endpoint.summary}
    if params or endpoint.method == "GET":
        operation["parameters"] = params
    if endpoint.need == DECIDE:
        operation["security"] = [{"bearer": []}]
    if endpoint.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": endpoint.body}},
        }
    responses: dict[str, Any] = {code: {"description": text} for code, text in endpoint.answers.items()}
    if endpoint.media is not None and "200" in responses:
        responses["200"]["content"] = {endpoint.media: {}}
    operation["responses"] = responses
    return operation


def document(routes: Sequence[Endpoint]) -> dict[str, Any]:
    """The OpenAPI document of ``routes``."""
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in routes:
        paths.setdefault(endpoint.documented_path, {})[endpoint.method.lower()] = _operation(endpoint)
    return {
        "openapi": "3.1.0",
        "info": {"title": "toolspan serve", "version": SCHEMA_VERSION},
        "paths": paths,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }


def serving(routes: Callable[[], Sequence[Endpoint]]) -> Handler:
    """The handler of ``GET /openapi.json`` for the table ``routes()`` gives."""

    async def openapi(state: ServerState, request: Request) -> Response:
        return JSONResponse(document(routes()))

    return openapi
