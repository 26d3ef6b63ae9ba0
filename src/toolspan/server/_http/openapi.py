"""The OpenAPI 3.1 document of the server (``GET /openapi.json``)."""

from __future__ import annotations

from typing import Any

from toolspan.bridge.views import SCHEMA_VERSION
from toolspan.bridge.views.registry import VIEWS
from toolspan.server._store.query import PARAMETERS

__all__ = ["openapi_document"]


def _get(summary: str, media: str = "application/json", params: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "parameters": [
                {"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params
            ],
            "responses": {
                "200": {"description": "OK", "content": {media: {}}},
                "404": {"description": "unknown id: {error, status}"},
            },
        }
    }


def _frontend_paths(sse: str, trace: tuple[str, ...], conversation: tuple[str, ...]) -> dict[str, Any]:
    """The AG-UI and AI SDK UI message streams, and the AG-UI agent endpoint."""
    agent = {
        "post": {
            "summary": "AG-UI agent endpoint: a RunAgentInput whose threadId names a conversation; its runs"
            " stream as AG-UI events (SSE), recorded then live",
            "responses": {
                "200": {"description": "AG-UI events", "content": {sse: {}}},
                "400": {"description": "not a RunAgentInput: {error, status}"},
            },
        }
    }
    return {
        "/api/traces/{trace_id}/ag-ui": _get("AG-UI events, JSON Lines", "application/x-ndjson", trace),
        "/api/traces/{trace_id}/ai-sdk": _get(
            "AI SDK UI message stream chunks, JSON Lines", "application/x-ndjson", trace
        ),
        "/api/traces/{trace_id}/ag-ui/stream": _get(
            "Live AG-UI events of one trace (SSE; id = event number, resume with Last-Event-ID)", sse, trace
        ),
        "/api/conversations/{conversation_id}/ag-ui/stream": _get(
            "Live AG-UI events of one conversation (SSE; id = event number)", sse, conversation
        ),
        "/api/traces/{trace_id}/ai-sdk/stream": _get(
            "Live AI SDK UI message stream v1 of one trace (SSE, data: [DONE] at the end)", sse, trace
        ),
        "/api/conversations/{conversation_id}/ai-sdk/stream": _get(
            "Live AI SDK UI message stream v1 of one conversation (SSE)", sse, conversation
        ),
        "/api/ag-ui": agent,
    }


def _post(summary: str, schema: dict[str, Any], responses: dict[str, str]) -> dict[str, Any]:
    return {
        "summary": summary,
        "security": [{"bearer": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
        "responses": {code: {"description": text} for code, text in responses.items()},
    }


_WRITE_REFUSALS = {
    "400": "a field missing, malformed or not taken (by included), or a value JSON has no place for (NaN,"
    " 1e999, a lone surrogate, nesting too deep): {error, status}, naming the field",
    "401": "missing or wrong decider token",
    "403": "the server has no decider (--decider NAME=TOKEN), the application's token (it never decides),"
    " or a foreign Origin",
    "404": "no such tool call known here",
    "408": "the body stopped coming",
    "413": "body over the size limit",
    "415": "the body is not application/json",
}


def _control_paths() -> dict[str, Any]:
    """The control channel (``_http.control``): who the token is, the inbox, decisions and cancel requests."""
    text = {"type": ["string", "null"]}
    execution = {"type": "string", "pattern": "^exec_[0-9a-f]{16}$", "description": "exec_<span id>"}
    trace = {
        "type": "string",
        "pattern": "^[0-9a-fA-F]{32}$",
        "description": "the call's trace (needed only when another trace holds the same span id)",
    }
    decision = {
        "type": "object",
        "additionalProperties": False,
        "required": ["execution_id", "decision", "shown"],
        "properties": {
            "execution_id": execution,
            "trace_id": trace,
            "decision": {"enum": ["allow", "deny"]},
            "shown": {
                "type": "string",
                "description": "arguments_sha256 of the inbox entry (or page step) the decider was shown",
            },
            "note": text,
            "arguments": {
                "type": ["object", "null"],
                "description": "edited arguments (allow only): must fit the tool's recorded parameter schema",
            },
        },
    }
    cancel = {
        "type": "object",
        "additionalProperties": False,
        "required": ["execution_id"],
        "properties": {"execution_id": execution, "trace_id": trace, "note": text},
    }
    wait = {"name": "wait", "in": "query", "required": False, "schema": {"type": "number", "maximum": 30}}
    decision_get = _get(
        "The decision on one tool call (null until made), long-polled up to ?wait= seconds (?trace_id= names"
        " the call's trace); with ?call_id=, ?tool= and ?shown=, also a decision made on the same call before"
        " its application died (resumes)",
        params=("execution_id",),
    )
    decision_get["get"]["parameters"] += [
        wait,
        *(
            {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
            for name in ("trace_id", "call_id", "tool", "shown")
        ),
    ]
    cancels_get = _get("Cancel requests of the running calls named by ?execution_id= (repeated), long-polled")
    cancels_get["get"]["parameters"] = [
        {"name": "execution_id", "in": "query", "required": True, "schema": {"type": "string"}},
        wait,
    ]
    inbox = _get(
        "Inbox: one entry per tool span waiting for a decision (execution_id, trace_id, span_id, call_id,"
        " tool, arguments as recorded, arguments_sha256, agent, service, waiting_since, decision), oldest"
        " first; paged by ?limit= and ?after= (the page's next)"
    )
    inbox["get"]["parameters"] = [
        {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "maximum": 1000}},
        {"name": "after", "in": "query", "required": False, "schema": {"type": "string"}},
    ]
    return {
        "/api/whoami": _get(
            "What the token sent may do: {name (a decider's, else null), can (ingest, read, decide)}; 401 for"
            " a token the server does not hold"
        ),
        "/api/control/waiting": inbox,
        "/api/control/decisions": {
            "post": _post(
                "Decide one waiting tool call: allow, deny, or allow with edited arguments (first decision"
                " wins), recorded as made by the decider token's name",
                decision,
                {
                    "200": "the decision that stands (made now, or the same one made before)",
                    **_WRITE_REFUSALS,
                    "409": "already decided otherwise (body.decision: the one that stands), not waiting"
                    " (body.state), or shown does not match what the call recorded (body.arguments_sha256)",
                    "422": "the edited arguments do not fit the tool's recorded parameter schema (or it has"
                    " none)",
                },
            )
        },
        "/api/control/decisions/{execution_id}": decision_get,
        "/api/control/cancels": {
            **cancels_get,
            "post": _post(
                "Ask the application to cancel a running tool call (with a decider token)",
                cancel,
                {
                    "202": "requested",
                    "200": "requested before (same body)",
                    **_WRITE_REFUSALS,
                    "409": "the call already ended (body.state), or it waits for its approval",
                },
            ),
        },
    }


def openapi_document() -> dict[str, Any]:
    trace = ("trace_id",)
    job = ("job_id",)
    conversation = ("conversation_id",)
    sse = "text/event-stream"
    lines = "application/x-ndjson"
    query = [
        {"name": name, "in": "query", "required": False, "schema": {"type": "string"}} for name in PARAMETERS
    ]
    listing = _get("Trace summaries, newest first, cursor-paginated")
    listing["get"]["parameters"] = query
    return {
        "openapi": "3.1.0",
        "info": {"title": "toolspan serve", "version": SCHEMA_VERSION},
        "paths": {
            "/v1/traces": {
                "post": {
                    "summary": "OTLP/HTTP trace export (protobuf or JSON, optionally gzip)",
                    "responses": {
                        "200": {
                            "description": "ExportTraceServiceResponse (partial_success when spans rejected)"
                        },
                        "400": {"description": "malformed body; nothing stored"},
                        "408": {"description": "the body stopped coming for --read-timeout; nothing stored"},
                        "413": {"description": "body (or inflated body) over the size limit"},
                        "415": {"description": "unsupported content type or encoding"},
                        "503": {"description": "the store cannot take it now (a full disk): retry"},
                    },
                }
            },
            "/v1/logs": {
                "post": {
                    "summary": "OTLP/HTTP logs export (protobuf or JSON, optionally gzip): log records joined"
                    " to their spans by trace and span id, as span events",
                    "responses": {
                        "200": {
                            "description": "ExportLogsServiceResponse (partial_success when log records"
                            " without a trace id or span id were rejected)"
                        },
                        "400": {"description": "malformed body; nothing stored"},
                        "408": {"description": "the body stopped coming for --read-timeout; nothing stored"},
                        "413": {"description": "body (or inflated body) over the size limit"},
                        "415": {"description": "unsupported content type or encoding"},
                        "503": {"description": "the store cannot take it now (a full disk): retry"},
                    },
                }
            },
            "/healthz": _get("Liveness and counts"),
            "/api/traces": listing,
            **{
                f"/api/traces/{{trace_id}}/{view.name}": _get(
                    view.title[:1].upper() + view.title[1:] + (", JSON Lines" if view.lines else ""),
                    lines if view.lines else "application/json",
                    trace,
                )
                for view in VIEWS.values()
                if view.per_trace
            },
            "/api/conversations/{conversation_id}/timeline": _get(
                "Conversation timelines", params=conversation
            ),
            "/api/conversations/{conversation_id}/progress": _get(
                "Progress stream of the conversation's traces, JSON Lines", lines, conversation
            ),
            "/api/conversations/{conversation_id}/progress/stream": _get(
                "Live progress envelopes of one conversation (SSE; id = bookmark seq)", sse, conversation
            ),
            "/api/jobs/{job_id}/trace": _get(
                "Alias of /api/traces/{id}/tree (trace id = job id)", params=job
            ),
            "/api/jobs/{job_id}/replay": _get("The trace document with read_only: true", params=job),
            "/api/jobs/{job_id}/trace/page": _get("The live trace page (HTML)", "text/html", job),
            "/traces/{trace_id}": _get("The live trace page (HTML)", "text/html", trace),
            "/traces": _get("The newest traces, linking to their pages (HTML)", "text/html"),
            "/api/traces/{trace_id}/page": _get("The trace page's data, live (page schema)", params=trace),
            "/api/traces/{trace_id}/otlp": _get(
                "The trace's spans as an OTLP JSON ExportTraceServiceRequest, log records joined as span"
                " events (what toolspan.replay reads)",
                params=trace,
            ),
            "/api/stream": _get("Live act/observe events of all traces (SSE, Last-Event-ID resume)", sse),
            "/api/traces/{trace_id}/stream": _get("Live act/observe events of one trace (SSE)", sse, trace),
            "/api/traces/{trace_id}/progress/stream": _get(
                "Live progress envelopes of one trace (SSE; id = bookmark seq, resume with Last-Event-ID"
                " or ?since=)",
                sse,
                trace,
            ),
            "/api/conversations/{conversation_id}/stream": _get(
                "Live act/observe events of one conversation (SSE)", sse, conversation
            ),
            **_frontend_paths(sse, trace, conversation),
            **_control_paths(),
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
