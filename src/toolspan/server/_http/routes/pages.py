"""The HTML pages of ``toolspan serve``: the list of runs, the inbox of calls waiting for a decision, and the
live trace page of one run (``toolspan.page``).

- ``/traces``: every run, newest first, with a search, a state filter, duration bars and counts, kept live
  by the all-traces stream; ``/inbox``: every tool call waiting for a decision, with Allow, Deny and Edit.
  Both pages hold no data: their scripts read ``/api/traces`` and ``/api/control/waiting`` with the tab's
  token, so they are served to anyone and ask for the token when the server wants one (kept in the tab
  only, never in a cookie or a URL).
- ``/traces/{id}`` and ``/api/jobs/{id}/trace/page``: the trace page in live mode. It follows
  ``/api/traces/{id}/stream`` and re-fetches ``/api/traces/{id}/page`` (``to_pages(spans, live=True)``), so
  running tools appear and finish while you watch; Allow, Deny, Edit and Cancel show to a decider's token.
  Asked for without the token (a browser opening the address the banner printed), it is served without its
  data, and asks for the token.
- ``/`` leads to ``/traces``.

Every page's Content-Security-Policy allows its own scripts and style (by hash) and requests to this
server only; values are written as text, never as HTML.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from toolspan.bridge.model import Span
from toolspan.bridge.views import to_pages
from toolspan.page import LiveOptions, page_json, render_app, render_html
from toolspan.server._http.auth import WITHOUT_TOKEN
from toolspan.server._http.jsonio import error
from toolspan.server._http.params import trace_id_param
from toolspan.server._http.routes.traces import rendered
from toolspan.server._http.state import ServerState

__all__ = ["home", "inbox", "trace_data", "trace_list", "trace_page"]


# What the top bar of every page asks: what the tab's token may do, how many calls wait for a decision.
_WHOAMI: Final = "/api/whoami"
_WAITING: Final = "/api/control/waiting"
_APP_URLS: Final = {"whoami": _WHOAMI, "waiting": _WAITING}


def _page_data(spans: Sequence[Span]) -> str:
    """The live page's data: the page document(s) of ``spans`` as JSON text."""
    docs = to_pages(list(spans), live=True)
    return page_json(docs[0] if len(docs) == 1 else docs)


def _page_bytes(spans: Sequence[Span]) -> bytes:
    return _page_data(spans).encode("utf-8")


def _trace_page_html(trace_id: str, spans: Sequence[Span] | None, control: bool = False) -> str:
    """The live trace page of ``trace_id``; ``spans=None``: served without its data (the request had no
    token the server holds), the page reads it with the tab's token. With ``control`` (the server has
    decider tokens), with the buttons that decide and cancel tool calls (``_http.routes.control``), shown to a
    token that may decide."""
    docs = to_pages(list(spans), live=True) if spans is not None else []
    live = LiveOptions(
        stream_url=f"/api/traces/{trace_id}/stream",
        data_url=f"/api/traces/{trace_id}/page",
        decisions_url="/api/control/decisions" if control else None,
        cancels_url="/api/control/cancels" if control else None,
        whoami_url=_WHOAMI,
        fetch_first=spans is None,
        list_url="/traces",
        waiting_url=_WAITING,
    )
    title = None if spans is not None else "trace " + trace_id
    return render_html(docs[0] if len(docs) == 1 else docs, live=live, title=title)


def _trace_page_bytes(spans: Sequence[Span], control: bool) -> bytes:
    """The live trace page of ``spans`` (one trace) with its data, as bytes."""
    return _trace_page_html(spans[0].trace_id, spans, control).encode("utf-8")


def _trace_list_html() -> str:
    """The list of runs (its script reads ``/api/traces``)."""
    return render_app("list", _APP_URLS)


def _inbox_html() -> str:
    """The inbox of calls waiting for a decision (its script reads ``/api/control/waiting``)."""
    return render_app("inbox", _APP_URLS)


async def home(state: ServerState, request: Request) -> Response:
    """``/``: the trace list (a browser pointed at the server's address lands on it)."""
    query = request.url.query
    return RedirectResponse("/traces" + (f"?{query}" if query else ""), status_code=307)


async def trace_list(state: ServerState, request: Request) -> Response:
    """``/traces``."""
    return HTMLResponse(_trace_list_html())


async def inbox(state: ServerState, request: Request) -> Response:
    """``/inbox``."""
    return HTMLResponse(_inbox_html())


async def trace_page(state: ServerState, request: Request) -> Response:
    """``/traces/{id}`` and ``/api/jobs/{id}/trace/page``. The buttons that decide and cancel show when the
    server has decider tokens (deciding needs one)."""
    param = "trace_id" if "trace_id" in request.path_params else "job_id"
    control = bool(state.config.deciders)
    if request.scope.get(WITHOUT_TOKEN):
        # Asked for without the token: the page without its data (nothing said of the trace, not even
        # whether it exists); it reads the data with the token it asks for.
        trace_id = trace_id_param(request.path_params[param])
        if trace_id is None:
            return error(404, f"no trace {request.path_params[param]!r}")
        return HTMLResponse(await run_in_threadpool(_trace_page_html, trace_id, None, control))
    made = await rendered(
        state, request, param, ("page.html", control), functools.partial(_trace_page_bytes, control=control)
    )
    if isinstance(made, Response):
        return made
    return HTMLResponse(made[1])


async def trace_data(state: ServerState, request: Request) -> Response:
    """``/api/traces/{id}/page``: the live page's data."""
    made = await rendered(state, request, "trace_id", "page", _page_bytes)
    if isinstance(made, Response):
        return made
    return Response(made[1], media_type="application/json", headers={"cache-control": "no-store"})
