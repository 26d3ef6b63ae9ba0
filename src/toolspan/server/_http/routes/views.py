"""``GET /api/traces/{id}/{view}``: every view of the bridge's registry served for one trace (``VIEWS`` whose
``per_trace`` is set), exactly as ``toolspan convert`` writes it."""

from __future__ import annotations

import functools

from starlette.requests import Request
from starlette.responses import Response

from toolspan.bridge.views.registry import VIEWS, View
from toolspan.server._http.endpoints import JSON, LINES, Endpoint, Handler
from toolspan.server._http.render import render
from toolspan.server._http.routes.traces import rendered
from toolspan.server._http.state import ServerState

__all__ = ["endpoints"]


def _handler(view: View) -> Handler:
    async def serve(state: ServerState, request: Request) -> Response:
        made = await rendered(state, request, "trace_id", view.name, functools.partial(render, view.name))
        if isinstance(made, Response):
            return made
        return Response(made[1], media_type=LINES if view.lines else JSON)

    return serve


def endpoints() -> list[Endpoint]:
    """One route per view served for a trace, in the registry's order."""
    return [
        Endpoint(
            f"/api/traces/{{trace_id:str}}/{view.name}",
            "GET",
            _handler(view),
            view.title[:1].upper() + view.title[1:] + (", JSON Lines" if view.lines else ""),
            LINES if view.lines else JSON,
        )
        for view in VIEWS.values()
        if view.per_trace and view.media == "json"
    ]
