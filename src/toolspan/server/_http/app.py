"""The Starlette application of ``toolspan serve``, built from the table of routes (``registry.ROUTES``) over
the server's state: every route a thin shell (bytes in -> bridge readers -> store; store -> bridge views ->
bytes out), inside the guards every response passes (security headers, the JSON error of a failed
handler, the Host check, CORS when asked, the bearer tokens)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolspan.server._http.auth import DECIDE, READ, BearerAuth, FailureThrottle, Needs, Tokens
from toolspan.server._http.config import ServerConfig
from toolspan.server._http.guards import Failures, HostCheck, SecurityHeaders, allowed_hosts
from toolspan.server._http.jsonio import RETRY_AFTER_S, error
from toolspan.server._http.registry import ROUTES
from toolspan.server._http.state import ServerState
from toolspan.server._rows.errors import STORE_BUSY
from toolspan.server._store.api import StoreApi

__all__ = ["build_app"]

_logger = logging.getLogger(__name__)


async def _not_found(request: Request, exc: Exception) -> Response:
    return error(404, f"no route {request.url.path!r}")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    allowed = getattr(exc, "headers", None) or {}
    response = error(405, f"{request.method[:20]} is not allowed on {request.url.path[:200]!r}")
    if "allow" in {k.lower() for k in allowed}:
        response.headers["allow"] = next(v for k, v in allowed.items() if k.lower() == "allow")
    return response


async def _store_failed(request: Request, exc: Exception) -> Response:
    _logger.error("toolspan serve: the store failed a read: %s", exc)
    response = error(503, f"the store cannot answer now ({exc}): retry")
    response.headers["retry-after"] = str(RETRY_AFTER_S)
    return response


def _middleware(config: ServerConfig, throttle: FailureThrottle) -> list[Middleware]:
    middleware: list[Middleware] = [
        Middleware(SecurityHeaders),
        Middleware(Failures),
        Middleware(HostCheck, allowed=allowed_hosts(config.host, config.allowed_hosts)),
    ]
    if config.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(config.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type", "content-encoding", "last-event-id"],
            )
        )
    # Always: it also tells the routes what the request's token may do (``auth.access_of``). A route that
    # decides is read first; the route then checks the decider (``auth.decider``).
    needs = Needs((e.method, e.path, READ if e.need == DECIDE else e.need, e.page) for e in ROUTES)
    tokens = Tokens(config.token, config.deciders)
    middleware.append(Middleware(BearerAuth, tokens=tokens, needs=needs, throttle=throttle))
    return middleware


def build_app(config: ServerConfig, store: StoreApi) -> tuple[Starlette, ServerState]:
    """The ASGI application of ``config`` over ``store``, and the ``ServerState`` behind it."""
    state = ServerState(config, store)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await state.start()
        try:
            yield
        finally:
            await run_in_threadpool(state.stop)

    routes = [Route(e.path, functools.partial(e.handler, state), methods=[e.method]) for e in ROUTES]
    handlers: dict[Any, Any] = {404: _not_found, 405: _not_allowed}
    handlers.update(dict.fromkeys(STORE_BUSY, _store_failed))
    starlette = Starlette(
        routes=routes,
        middleware=_middleware(config, state.auth_failures),
        exception_handlers=handlers,
        lifespan=lifespan,
    )
    return starlette, state
