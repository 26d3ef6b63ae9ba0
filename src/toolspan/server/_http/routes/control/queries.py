"""The control channel's reads: who the token is (``/api/whoami``), the inbox of calls waiting for a decision
(``/api/control/waiting``), and the long polls of a call's decision and of running calls' cancel requests
(``/api/control/decisions/{execution_id}``, ``/api/control/cancels``). A long poll reads again after each
change (``ServerState.decisions``), and ends when it finds something, when its wait is over, or at once when
its client hangs up."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from toolspan import semconv as sc
from toolspan._util.ids import arguments_sha256, parse_execution_id, parse_span_id, parse_trace_id
from toolspan.bridge.facts import AGENT, TOOL, agent_name, classify, parse_json, tool_call
from toolspan.bridge.internal import arguments_text
from toolspan.bridge.model import Span
from toolspan.bridge.views import run_name
from toolspan.server._http.auth import access_of
from toolspan.server._http.endpoints import query
from toolspan.server._http.jsonio import JSONResponse, Refused, strict_value
from toolspan.server._http.routes.control.calls import (
    MAX_WAIT_S,
    cancel_body,
    decision_body,
    ms,
    trace_param,
    vouched_since,
    wait_param,
    waiting,
)
from toolspan.server._http.state import ServerState
from toolspan.server._rows.control import DecisionRow
from toolspan.server._store.api import StoreApi
from toolspan.server._store.control import ControlRows
from toolspan.server._streams.wakeups import Changes

__all__ = ["CANCELS_PARAMS", "DECISION_PARAMS", "INBOX_PARAMS", "cancels", "decision", "inbox", "whoami"]

R = TypeVar("R")
INBOX_PAGE: Final = 200
INBOX_MAX: Final = 1000
# After a long poll answers, its application has this long to ask again before it counts as gone.
POLL_GRACE_S: Final = 5.0
_NO_STORE: Final = {"cache-control": "no-store"}
# The largest time a store holds (a signed 64-bit integer of nanoseconds): an ``after`` beyond is refused.
_MAX_NS: Final = (1 << 63) - 1

# The OpenAPI document's query parameters of each route.
_WAIT: Final = query("wait", {"type": "number", "maximum": int(MAX_WAIT_S)})
INBOX_PARAMS: Final = (query("limit", {"type": "integer", "maximum": INBOX_MAX}), query("after"))
DECISION_PARAMS: Final = (_WAIT, *(query(name) for name in ("trace_id", "call_id", "tool", "shown")))
CANCELS_PARAMS: Final = (query("execution_id", required=True), _WAIT)


async def whoami(state: ServerState, request: Request) -> Response:
    """``GET /api/whoami``: what the token sent may do."""
    access = access_of(request.scope)
    return JSONResponse({"name": access.name, "can": access.listed()}, headers=_NO_STORE)


# --- the inbox ---------------------------------------------------------------------------------------------


def _arguments(span: Span) -> tuple[Any, str | None]:
    """``(arguments as recorded, their JSON text)``: the value when the text is strict JSON, else the text
    itself (``NaN`` is no JSON: such a record is shown as the text it is)."""
    text = arguments_text(span)
    if text is None:
        return None, None
    value = parse_json(text)
    if value is not text and strict_value(value, max_depth=10_000) is not None:
        value = text
    return value, text


def _agent_of(span: Span, trace: list[Span]) -> str | None:
    """The name of the nearest agent span above ``span`` in its trace, as far as the server has it (pending
    records are sent for tool spans: an agent span arrives when it ends), else the agent its approval
    request names (``toolspan.permission_required``'s ``gen_ai.agent.name``), else the agent name the tool
    span itself carries, if any."""
    asked = [
        e.attributes[sc.GEN_AI_AGENT_NAME]
        for e in span.events
        if e.name == sc.PERMISSION_REQUIRED_EVENT and isinstance(e.attributes.get(sc.GEN_AI_AGENT_NAME), str)
    ]
    own = asked[-1] if asked else span.attributes.get(sc.GEN_AI_AGENT_NAME)
    by_id = {s.span_id: s for s in trace}
    parent = span.parent_span_id
    seen = 0
    while parent is not None and seen < 1000:
        above = by_id.get(parent)
        if above is None:
            break
        if classify(above) == AGENT:
            return agent_name(above)
        parent = above.parent_span_id
        seen += 1
    return None if own is None else str(own)


def _entry(
    span: Span, trace: list[Span], decided: DecisionRow | None, received_ns: int | None
) -> dict[str, Any]:
    """One call of the inbox: ``decided``, the decision made on it, ``received_ns``, when it arrived."""
    call = tool_call(span)
    value, text = _arguments(span)
    return {
        "execution_id": call.execution_id,
        "trace_id": span.trace_id,
        # The run's name as the trace list gives it: what the user asked, else its root's name.
        "run": run_name(trace) or span.trace_id,
        "span_id": span.span_id,
        "call_id": call.call_id,
        "tool": call.name,
        "arguments": value,
        "arguments_recorded": text is not None,
        "arguments_sha256": arguments_sha256(text),
        "agent": _agent_of(span, trace),
        "service": span.resource.get(sc.SERVICE_NAME),
        "waiting_since": ms(vouched_since(span, received_ns)),
        # Decided here, not yet applied by the application (or it is not running now).
        "decision": None if decided is None else decision_body(decided),
    }


def _inbox(store: StoreApi, stale_after_s: float, after: tuple[int, str, str], limit: int) -> dict[str, Any]:
    """One page of the inbox: the calls waiting whose application asked lately (``stale_after_s``), read in
    four reads whatever the page's size (its calls, their traces, their decisions, when they arrived)."""
    now = time.time_ns()
    stale_ns = int(stale_after_s * 1e9)
    spans = store.waiting_tool_spans(after, now - stale_ns, now - stale_ns, limit + 1)
    more = len(spans) > limit
    spans = spans[:limit]
    calls = [span for span in spans if classify(span) == TOOL and waiting(span)]
    keys = [(span.trace_id, span.span_id) for span in calls]
    traces = store.spans_by_trace(sorted({span.trace_id for span in calls})) if calls else {}
    decided = store.control.decisions_for_spans(keys)
    received = store.control.received_ns_of(keys)
    out = [
        _entry(span, traces.get(span.trace_id, []), decided.get(key), received.get(key))
        for span, key in zip(calls, keys, strict=True)
    ]
    page: dict[str, Any] = {"waiting": out}
    if more and spans:
        last = spans[-1]
        page["next"] = f"{last.start_ns}-{last.trace_id}-{last.span_id}"
    return page


def _after_param(raw: str | None) -> tuple[int, str, str]:
    if raw is None:
        return (-1, "", "")
    parts = raw.split("-")
    if (
        len(parts) != 3
        or not parts[0].isascii()
        or not parts[0].isdigit()
        or len(parts[0]) > 19
        or int(parts[0]) > _MAX_NS
        or parse_trace_id(parts[1]) is None
        or parse_span_id(parts[2]) is None
    ):
        raise Refused(400, f"after must be the 'next' of an inbox page, got {raw[:80]!r}")
    return int(parts[0]), parts[1], parts[2]


def _limit_param(raw: str | None) -> int:
    if raw is None:
        return INBOX_PAGE
    if not raw.isascii() or not raw.isdigit() or len(raw) > 6 or not 1 <= int(raw) <= INBOX_MAX:
        raise Refused(400, f"limit must be a whole number from 1 to {INBOX_MAX}, got {raw[:40]!r}")
    return int(raw)


async def inbox(state: ServerState, request: Request) -> Response:
    """``GET /api/control/waiting``."""
    try:
        after = _after_param(request.query_params.get("after"))
        limit = _limit_param(request.query_params.get("limit"))
    except Refused as e:
        return e.response()
    page = await run_in_threadpool(_inbox, state.store, state.config.stale_after_s, after, limit)
    return JSONResponse(page, headers=_NO_STORE)


# --- long polls --------------------------------------------------------------------------------------------


async def _hung_up(request: Request) -> None:
    """Returns once the client of ``request`` disconnected (its body, if any, read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _poll(changes: Changes, request: Request, read: Callable[[], R], wait: float) -> tuple[R, bool]:
    """``read()`` again after each change until it finds something, ``wait`` seconds have passed or the
    client hung up (a long poll that frees its connection at once); ``(found, client hung up)``."""
    deadline = time.monotonic() + wait
    gone = asyncio.ensure_future(_hung_up(request))
    try:
        while True:
            change = changes.current()
            found = await run_in_threadpool(read)
            left = deadline - time.monotonic()
            if found or left <= 0 or gone.done():
                return found, gone.done()
            woken = asyncio.ensure_future(change.wait())
            try:
                await asyncio.wait({woken, gone}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                woken.cancel()
    finally:
        gone.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await gone


def _decision_read(
    rows: ControlRows, key: tuple[str | None, str], match: tuple[str, str | None, str | None] | None
) -> dict[str, Any] | None:
    """What a long poll of the decision on ``key`` answers: the decision on that span, else (with
    ``match``: ``(call id, tool, shown)``) one on another span of the same call its application could not
    apply; ``None`` while neither is there."""
    found = rows.decision_for(key)
    if len(found) == 1:
        return {"decision": decision_body(found[0]), "resumes": None}
    if found or match is None:
        return None  # several traces hold this span id and none was named: nothing is given
    call_id, tool, shown = match
    now = time.time_ns()
    for row in rows.decisions_of_call(call_id):
        if (row.trace_id, row.span_id) == key or row.tool != tool or row.shown != shown:
            continue
        state = rows.span_state(row.trace_id, row.span_id)
        until = rows.poll_until(row.trace_id, row.span_id)
        # Only a call that can no longer apply its decision hands it on: still waiting (not ended) and
        # its application no longer asking (it died). A live call's decision stays its own.
        if state is not None and state[0] is None and (until is None or until < now):
            return {"decision": None, "resumes": decision_body(row)}
    return None


def _mark(rows: ControlRows, key: tuple[str | None, str], until_ns: int) -> None:
    trace_id, span_id = key
    if trace_id is not None:
        rows.polled(trace_id, span_id, until_ns)


async def decision(state: ServerState, request: Request) -> Response:
    """``GET /api/control/decisions/{execution_id}``: the decision on one call, long-polled."""
    raw = request.path_params["execution_id"]
    params = request.query_params
    try:
        span_id = parse_execution_id(raw)
        if span_id is None:
            raise Refused(400, f"not an execution id (exec_ + 16 hex): {raw[:80]!r}")
        trace = params.get("trace_id")
        key = (None if trace is None else trace_param(trace, "trace_id"), format(span_id, "016x"))
        wait = wait_param(request)
        call_id, tool, shown = params.get("call_id"), params.get("tool"), params.get("shown")
        match = None if call_id is None else (call_id, tool, shown)
    except Refused as e:
        return e.response()
    rows = state.store.control
    await run_in_threadpool(_mark, rows, key, time.time_ns() + int((wait + POLL_GRACE_S) * 1e9))
    found, gone = await _poll(state.decisions, request, lambda: _decision_read(rows, key, match), wait)
    # The application asks again right after an answer; a client that hung up asks no more.
    until = time.time_ns() + (0 if gone else int(POLL_GRACE_S * 1e9))
    await run_in_threadpool(_mark, rows, key, until)
    body = {"execution_id": raw, "trace_id": key[0], **(found or {"decision": None, "resumes": None})}
    return JSONResponse(body, headers=_NO_STORE)


async def cancels(state: ServerState, request: Request) -> Response:
    """``GET /api/control/cancels?execution_id=...``: the cancel requests of the running calls named."""
    span_ids = []
    try:
        for raw in request.query_params.getlist("execution_id")[:1000]:
            span_id = parse_execution_id(raw)
            if span_id is None:
                raise Refused(400, f"not an execution id (exec_ + 16 hex): {raw[:80]!r}")
            span_ids.append(format(span_id, "016x"))
        wait = wait_param(request)
    except Refused as e:
        return e.response()
    rows = state.store.control
    found, _ = await _poll(state.decisions, request, lambda: rows.cancels_for(span_ids), wait)
    return JSONResponse({"cancels": [cancel_body(r) for r in found]}, headers=_NO_STORE)
