"""The HTML pages of ``toolspan serve``: the list of runs, the inbox of calls waiting for a decision, and the
live trace page of one run (``toolspan.page``).

- ``/traces``: every run, newest first, with a search, a state filter, duration bars and counts, kept live
  by the all-traces stream; ``/inbox``: every tool call waiting for a decision, with Allow, Deny and Edit.
  Both pages hold no data: their scripts read ``/api/traces`` and ``/api/control/waiting`` with the tab's
  token, so they are served to anyone and ask for the token when the server wants one (kept in the tab
  only, never in a cookie or a URL).
- ``/traces/{id}`` and ``/api/jobs/{id}/trace/page``: the trace page in live mode. It follows
  ``/api/traces/{id}/page/stream``, which sends what changes in its data (``/api/traces/{id}/page``,
  ``to_pages(spans, live=True)``) as page deltas (``_streams.page``), so running tools appear and finish
  while you watch; Allow, Deny, Edit and Cancel show to a decider's token.
  Asked for without the token (a browser opening the address the banner printed), it is served without its
  data, and asks for the token. A stored trace of more than ``HEAD_STEPS`` spans is served at once with its
  first screen (``page_head`` of its first ``HEAD_STEPS`` spans by start, shown marked as loading), without
  waiting for its whole document: the page stream, opened without a version, sends that next (``event:
  page``, a large one in parts first, ``event: page-part``), and it replaces the first screen, the
  selection and the scroll kept.
- ``/`` leads to ``/traces``.

Every page's Content-Security-Policy allows its own scripts and style (by hash) and requests to this
server only; values are written as text, never as HTML.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from toolspan.bridge.model import Span
from toolspan.bridge.views import to_pages
from toolspan.bridge.views.internal import page_head
from toolspan.page import LiveOptions, page_json, render_app, render_html
from toolspan.server._http.auth import WITHOUT_TOKEN
from toolspan.server._http.jsonio import error
from toolspan.server._http.params import trace_id_param
from toolspan.server._http.renders import Version
from toolspan.server._http.routes.traces import rendered
from toolspan.server._http.state import ServerState
from toolspan.server._streams.page import PageVersion, page_chunks, page_tag, valid_tag, version_of

__all__ = ["home", "inbox", "page_stream", "trace_data", "trace_list", "trace_page"]


# A stored trace of more spans than this is served with its first screen of this many steps first (a screen
# shows about 40 rows): its whole document follows on the page stream.
HEAD_STEPS: Final = 100
# What the top bar of every page asks: what the tab's token may do, how many calls wait for a decision.
_WHOAMI: Final = "/api/whoami"
_WAITING: Final = "/api/control/waiting"
_LIST: Final = "/traces"
_INBOX: Final = "/inbox"
# Every URL the list and the inbox ask or link to (their scripts hold none): the top bar's, the list of runs
# and the all-traces stream, a run's page ("{trace_id}" replaced), where a decision is sent.
_APP_URLS: Final = {
    "whoami": _WHOAMI,
    "waiting": _WAITING,
    "list": _LIST,
    "inbox": _INBOX,
    "runs": "/api/traces",
    "stream": "/api/stream",
    "trace": "/traces/{trace_id}",
    "decisions": "/api/control/decisions",
}


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
    data = docs[0] if len(docs) == 1 else docs
    version = page_tag(page_json(data).encode("utf-8")) if spans is not None else None
    return _live_page_html(trace_id, data, version, control, fetch_first=spans is None)


def _head_page_html(state: ServerState, trace_id: str, control: bool) -> str | None:
    """The live trace page of a stored trace of more than ``HEAD_STEPS`` spans, with its first screen only
    (``page_head``); ``None`` for any other trace (it is served whole)."""
    row = state.store.trace_row(trace_id)
    if row is None or row.spans <= HEAD_STEPS:
        return None
    spans = state.store.first_spans(trace_id, HEAD_STEPS)
    if not spans:
        return None
    head = page_head(spans, live=True, end_ns=row.end_ns)
    # No version: the page stream sends the whole document first.
    return _live_page_html(trace_id, head, None, control, fetch_first=False)


def _live_page_html(
    trace_id: str,
    data: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    version: str | None,
    control: bool,
    fetch_first: bool,
) -> str:
    """The live trace page of ``trace_id`` showing ``data`` (``version``: its tag)."""
    live = LiveOptions(
        stream_url=f"/api/traces/{trace_id}/stream",
        data_url=f"/api/traces/{trace_id}/page",
        page_stream_url=f"/api/traces/{trace_id}/page/stream",
        version=version,
        decisions_url="/api/control/decisions" if control else None,
        cancels_url="/api/control/cancels" if control else None,
        whoami_url=_WHOAMI,
        fetch_first=fetch_first,
        list_url=_LIST,
        inbox_url=_INBOX,
        waiting_url=_WAITING,
    )
    title = "trace " + trace_id if fetch_first else None
    return render_html(data, live=live, title=title)


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
    return RedirectResponse(_LIST + (f"?{query}" if query else ""), status_code=307)


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
    trace_id = trace_id_param(request.path_params[param])
    if trace_id is not None:
        head = await run_in_threadpool(_head_page_html, state, trace_id, control)
        if head is not None:
            return HTMLResponse(head, headers={"cache-control": "no-store"})
    made = await rendered(
        state, request, param, ("page.html", control), functools.partial(_trace_page_bytes, control=control)
    )
    if isinstance(made, Response):
        return made
    return HTMLResponse(made[1])


async def trace_data(state: ServerState, request: Request) -> Response:
    """``/api/traces/{id}/page``: the live page's data, its tag as its ``ETag`` (what the page stream
    resumes from: ``?version=``). A stored trace's document is the one its page streams send from (built
    once per version for both, and kept to resume from)."""
    trace_id = trace_id_param(request.path_params["trace_id"])
    page = None
    if trace_id is not None:
        version = await run_in_threadpool(state.store.trace_version, trace_id)
        if version is not None:
            page = await _stored_page(state, trace_id, version)
    if page is None:  # a trace read from Tempo/Jaeger, or none: as every view of a trace is read
        made = await rendered(state, request, "trace_id", "page", _page_bytes)
        if isinstance(made, Response):
            return made
        page = PageVersion(page_tag(made[1]), {}, made[1])
    headers = {"cache-control": "no-store", "etag": f'"{page.tag}"'}
    return Response(page.body, media_type="application/json", headers=headers)


def _version_of(spans: Sequence[Span]) -> PageVersion:
    """The page version of one trace's spans, its document read back from its JSON text (as a client holds
    it: the deltas between two versions compare what the pages hold)."""
    body = _page_bytes(spans)
    return version_of(json.loads(body), body)


async def _current_page(state: ServerState, trace_id: str) -> tuple[PageVersion | None, bool]:
    """The trace's page document now (``None``: not held yet), and whether it is held here (else it was
    read from Tempo/Jaeger: polled)."""
    version = await run_in_threadpool(state.store.trace_version, trace_id)
    if version is None:
        remote = state.traces.remote(trace_id)
        if remote is None:
            return None, True
        spans = [s for s in (await remote()) or [] if s.trace_id == trace_id]
        return (await run_in_threadpool(_version_of, spans) if spans else None), False
    return await _stored_page(state, trace_id, version), True


async def _stored_page(state: ServerState, trace_id: str, version: Version) -> PageVersion | None:
    """The page document of a trace the store holds, at ``version``: built once for every reader (the
    render cache's bytes read back when it holds them)."""

    async def build() -> PageVersion | None:
        kept = state.renders.get((trace_id, "page"), version)
        if kept is not None:
            return await run_in_threadpool(lambda: version_of(json.loads(kept), kept))
        # A live page reads its trace again at each commit: the spans decoded are kept, for the next.
        spans = await run_in_threadpool(state.store.trace_spans, trace_id, keep=True)
        if not spans:
            return None
        page = await run_in_threadpool(_version_of, spans)
        state.renders.put((trace_id, "page"), version, page.body, len(spans))
        return page

    return await state.pages.current(trace_id, version, build)


async def page_stream(state: ServerState, request: Request) -> Response:
    """``/api/traces/{id}/page/stream``: the live page's document, then its deltas (``_streams.page``)."""
    raw = request.path_params["trace_id"]
    trace_id = trace_id_param(raw)
    if trace_id is None:
        return error(404, f"no trace {raw!r}")
    header = request.headers.get("last-event-id")
    field, since = ("Last-Event-ID", header) if header else ("version", request.query_params.get("version"))
    if since is not None and not valid_tag(since):
        return error(400, f"{field}: not a page version (32 hex digits): {since[:80]!r}")
    chunks = page_chunks(
        state.pages,
        functools.partial(_current_page, state, trace_id),
        state.notifier,
        trace_id,
        since,
        heartbeat_s=state.config.heartbeat_s,
    )
    return state.stream_response(chunks)
