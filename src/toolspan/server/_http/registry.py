"""The one table of the server's routes (``ROUTES``), in the order they are matched: the application
(``app.build_app``), what each route needs of a request's token (``auth.Needs``) and the OpenAPI document
(``routes.openapi``) are all built from it."""

from __future__ import annotations

from typing import Final

from toolspan._util.ids import hex_pattern
from toolspan.server._http.auth import ANY_TOKEN, DECIDE, INGEST, PUBLIC
from toolspan.server._http.endpoints import HTML, LINES, SSE, Endpoint, query
from toolspan.server._http.routes import ingest, openapi, pages, streams, traces, views
from toolspan.server._http.routes.control import queries, writes
from toolspan.server._http.trace_list import PARAMETERS
from toolspan.server._streams.page import TAG_DIGITS

__all__ = ["ROUTES"]

_TRACE: Final = "/api/traces/{trace_id:str}"
_CONVERSATION: Final = "/api/conversations/{conversation_id:str}"
_JOB: Final = "/api/jobs/{job_id:str}"
# A stream of a trace not stored yet waits for it: only an id that cannot be a trace's is refused.
_TRACE_STREAM: Final = {"200": "the stream", "404": "not a trace id: {error, status}"}
# Any text names a conversation (one not stored yet is waited for).
_CONVERSATION_STREAM: Final = {"200": "the stream"}

ROUTES: tuple[Endpoint, ...] = (
    # --- OTLP/HTTP ingest ---
    Endpoint(
        "/v1/traces",
        "POST",
        ingest.traces,
        "OTLP/HTTP trace export (protobuf or JSON, optionally gzip)",
        None,
        {"200": "ExportTraceServiceResponse (partial_success when spans rejected)", **ingest.RESPONSES},
        need=INGEST,
    ),
    Endpoint(
        "/v1/logs",
        "POST",
        ingest.logs,
        "OTLP/HTTP logs export (protobuf or JSON, optionally gzip): log records joined to their spans by"
        " trace and span id, as span events",
        None,
        {
            "200": "ExportLogsServiceResponse (partial_success when log records without a trace id or span"
            " id were rejected)",
            **ingest.RESPONSES,
        },
        need=INGEST,
    ),
    # --- the server itself ---
    Endpoint("/healthz", "GET", traces.healthz, "Liveness and counts", need=PUBLIC),
    Endpoint("/openapi.json", "GET", openapi.serving(lambda: ROUTES), "This document"),
    # --- the read API ---
    Endpoint(
        "/api/traces",
        "GET",
        traces.listing,
        "Trace summaries, newest first, cursor-paginated",
        params=tuple(query(name) for name in PARAMETERS),
    ),
    # --- live streams ---
    Endpoint(
        "/api/stream",
        "GET",
        streams.events,
        "Live act/observe events of all traces (SSE, Last-Event-ID resume)",
        SSE,
    ),
    Endpoint(
        f"{_TRACE}/stream",
        "GET",
        streams.events,
        "Live act/observe events of one trace (SSE)",
        SSE,
        _TRACE_STREAM,
    ),
    Endpoint(
        f"{_TRACE}/progress/stream",
        "GET",
        streams.progress,
        "Live progress envelopes of one trace (SSE; id = bookmark seq, resume with Last-Event-ID or ?since=)",
        SSE,
        _TRACE_STREAM,
    ),
    Endpoint(
        f"{_CONVERSATION}/progress/stream",
        "GET",
        streams.progress,
        "Live progress envelopes of one conversation (SSE; id = bookmark seq)",
        SSE,
        _CONVERSATION_STREAM,
    ),
    Endpoint(
        f"{_TRACE}/ag-ui/stream",
        "GET",
        streams.frontend,
        "Live AG-UI events of one trace (SSE; id = event number, resume with Last-Event-ID)",
        SSE,
        _TRACE_STREAM,
    ),
    Endpoint(
        f"{_TRACE}/ai-sdk/stream",
        "GET",
        streams.frontend,
        "Live AI SDK UI message stream v1 of one trace (SSE, data: [DONE] at the end)",
        SSE,
        _TRACE_STREAM,
    ),
    Endpoint(
        f"{_CONVERSATION}/ag-ui/stream",
        "GET",
        streams.frontend,
        "Live AG-UI events of one conversation (SSE; id = event number)",
        SSE,
        _CONVERSATION_STREAM,
    ),
    Endpoint(
        f"{_CONVERSATION}/ai-sdk/stream",
        "GET",
        streams.frontend,
        "Live AI SDK UI message stream v1 of one conversation (SSE)",
        SSE,
        _CONVERSATION_STREAM,
    ),
    Endpoint(
        "/api/ag-ui",
        "POST",
        streams.agent,
        "AG-UI agent endpoint: a RunAgentInput whose threadId names a conversation; its runs stream as AG-UI"
        " events (SSE), recorded then live",
        SSE,
        {"200": "AG-UI events", "400": "not a RunAgentInput: {error, status}"},
    ),
    # --- the control channel ---
    Endpoint(
        "/api/whoami",
        "GET",
        queries.whoami,
        "What the token sent may do: {name (a decider's, else null), can (ingest, read, decide)}; 401 for a"
        " token the server does not hold",
        need=ANY_TOKEN,
    ),
    Endpoint(
        "/api/control/waiting",
        "GET",
        queries.inbox,
        "Inbox: one entry per tool span waiting for a decision (execution_id, trace_id, run (the run's"
        " name, as the trace list gives it), span_id, call_id, tool, arguments as recorded,"
        " arguments_sha256, agent, service, waiting_since, decision), oldest first; paged by ?limit= and"
        " ?after= (the page's next)",
        params=queries.INBOX_PARAMS,
    ),
    Endpoint(
        "/api/control/decisions",
        "POST",
        writes.decide,
        "Decide one waiting tool call: allow, deny, or allow with edited arguments (first decision wins),"
        " recorded as made by the decider token's name",
        None,
        writes.DECISION_RESPONSES,
        body=writes.DECISION_SCHEMA,
        need=DECIDE,
    ),
    Endpoint(
        "/api/control/decisions/{execution_id:str}",
        "GET",
        queries.decision,
        "The decision on one tool call (null until made), long-polled up to ?wait= seconds (?trace_id= names"
        " the call's trace); with ?call_id=, ?tool= and ?shown=, also a decision made on the same call before"
        " its application died (resumes)",
        responses={"200": "OK", "400": "not an execution id, or a parameter that is not what it says"},
        params=queries.DECISION_PARAMS,
    ),
    Endpoint(
        "/api/control/cancels",
        "GET",
        queries.cancels,
        "Cancel requests of the running calls named by ?execution_id= (repeated), long-polled",
        params=queries.CANCELS_PARAMS,
    ),
    Endpoint(
        "/api/control/cancels",
        "POST",
        writes.cancel,
        "Ask the application to cancel a running tool call (with a decider token)",
        None,
        writes.CANCEL_RESPONSES,
        body=writes.CANCEL_SCHEMA,
        need=DECIDE,
    ),
    # --- conversations and jobs ---
    Endpoint(
        f"{_CONVERSATION}/progress",
        "GET",
        traces.conversation,
        "Progress stream of the conversation's traces, JSON Lines",
        LINES,
    ),
    Endpoint(
        f"{_CONVERSATION}/stream",
        "GET",
        streams.events,
        "Live act/observe events of one conversation (SSE)",
        SSE,
        _CONVERSATION_STREAM,
    ),
    Endpoint(f"{_CONVERSATION}/timeline", "GET", traces.conversation, "Conversation timelines"),
    Endpoint(f"{_JOB}/trace", "GET", traces.job, "Alias of /api/traces/{id}/tree (trace id = job id)"),
    Endpoint(f"{_JOB}/replay", "GET", traces.job, "The trace document with read_only: true"),
    Endpoint(f"{_JOB}/trace/page", "GET", pages.trace_page, "The live trace page (HTML)", HTML, page=True),
    # --- pages ---
    Endpoint(
        "/", "GET", pages.home, "Leads to the trace list (/traces)", None, {"307": "to /traces"}, page=True
    ),
    Endpoint(
        "/traces",
        "GET",
        pages.trace_list,
        "The newest traces, linking to their pages (HTML)",
        HTML,
        page=True,
    ),
    Endpoint("/inbox", "GET", pages.inbox, "The tool calls waiting for a decision (HTML)", HTML, page=True),
    Endpoint(
        "/traces/{trace_id:str}", "GET", pages.trace_page, "The live trace page (HTML)", HTML, page=True
    ),
    Endpoint(f"{_TRACE}/page", "GET", pages.trace_data, "The trace page's data, live (page schema)"),
    Endpoint(
        f"{_TRACE}/page/stream",
        "GET",
        pages.page_stream,
        "The live trace page's stream (SSE): event page, the whole document, then event delta, what changed"
        " (page-delta schema); id = the document's tag, resume with Last-Event-ID or ?version=",
        SSE,
        _TRACE_STREAM | {"400": "a Last-Event-ID or version that is not a page version: {error, status}"},
        (query("version", {"type": "string", "pattern": hex_pattern(TAG_DIGITS)}),),
    ),
    # --- one trace ---
    Endpoint(
        f"{_TRACE}/otlp",
        "GET",
        traces.otlp,
        "The trace's spans as an OTLP JSON ExportTraceServiceRequest, log records joined as span events (what"
        " toolspan.replay reads)",
    ),
    *views.endpoints(),
)
