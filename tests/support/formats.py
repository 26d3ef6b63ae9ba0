"""Test-side WRITERS: render neutral ``Span``s in every wire format the bridge reads.

Used by the parity tests (the same trace in every format reads back to the same spans) and by the
views tests (the same trace gives the same bridge output whatever its format). ``render_all(spans)``
yields ``(format_name, bytes)`` pairs.

Jaeger's formats are not written here: they are the real Jaeger's answers (v2.12.0, built from its Go
module), recorded by ``tests/e2e/test_jaeger_recordings.py`` for the traces of ``JAEGER_RECORDED``
(``tests/fixtures/jaeger/jaeger-<version>-<name>-<api>.json``); ``render`` gives them for exactly those
spans and refuses any other. ``jaeger_v1_bare`` is the v1 answer's trace object alone.

What a format cannot carry (so a parity trace must avoid it, or the comparison must allow it):
- Jaeger v1: microsecond times (use microsecond-aligned ns); no array/kvlist tags (written as JSON
  strings, so they read back as strings); no link attributes except ``opentracing.ref_type``
  (``follows_from`` / ``child_of``) and a same-trace link on a *root* span reads back as its parent
  (Jaeger's parent rule); no bytes type distinct from text (base64 text reads back as text); no scope
  version; an OK status message (``tests/e2e/losses.py`` has the rule, measured on the real Jaeger).
- Tempo / OTLP / Jaeger v3 carry everything the neutral model holds.
- Nothing carries ``Span.origin`` (where a span was read from); compare with ``origin=""``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.support.paths import TESTS
from toolspan.bridge.model import SPAN_KINDS, STATUS_CODES, Span

FORMATS = (
    "otlp_json",
    "otlp_jsonl",
    "otlp_proto",
    "otlp_proto_file",
    "jaeger_v1",
    "jaeger_v1_bare",
    "jaeger_v3",
    "tempo_v1",
    "tempo_v2",
)
# Formats with microsecond times and the other Jaeger v1 limits listed above.
MICROSECOND_FORMATS = frozenset({"jaeger_v1", "jaeger_v1_bare"})
# Never written here: what the real Jaeger answered, recorded (``JAEGER_RECORDED``).
JAEGER_FORMATS = frozenset({"jaeger_v1", "jaeger_v1_bare", "jaeger_v3"})


# --- OTLP JSON -----------------------------------------------------------------------------------


def _any_json(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_json(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": _attrs_json(value)}}
    raise TypeError(f"cannot write {type(value).__name__}")


def _attrs_json(attrs: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any_json(v)} for k, v in attrs.items()]


def _groups(spans: Sequence[Span]) -> list[tuple[dict[str, Any], str, list[Span]]]:
    """Spans grouped by (resource, scope), in first-seen order."""
    groups: dict[tuple[str, str], tuple[dict[str, Any], str, list[Span]]] = {}
    for s in spans:
        key = (json.dumps(dict(s.resource), sort_keys=True), s.scope)
        if key not in groups:
            groups[key] = (dict(s.resource), s.scope, [])
        groups[key][2].append(s)
    return list(groups.values())


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode("ascii")


def otlp_request(spans: Sequence[Span], *, tempo: bool = False) -> dict[str, Any]:
    """An OTLP JSON request; ``tempo=True`` writes ids in base64 and enums as names (gogo jsonpb)."""

    def ident(hex_id: str) -> str:
        return _b64(hex_id) if tempo else hex_id.upper()  # upper case: readers must lower it

    resource_spans = []
    for resource, scope, group in _groups(spans):
        out = []
        for s in group:
            span: dict[str, Any] = {
                "traceId": ident(s.trace_id),
                "spanId": ident(s.span_id),
                "name": s.name,
                "kind": f"SPAN_KIND_{s.kind}" if tempo else SPAN_KINDS.index(s.kind),
                "startTimeUnixNano": str(s.start_ns),
                "attributes": _attrs_json(s.attributes),
                "events": [
                    {"timeUnixNano": str(e.time_ns), "name": e.name, "attributes": _attrs_json(e.attributes)}
                    for e in s.events
                ],
                "links": [
                    {
                        "traceId": ident(ln.trace_id),
                        "spanId": ident(ln.span_id),
                        "attributes": _attrs_json(ln.attributes),
                    }
                    for ln in s.links
                ],
                "status": {},
            }
            if s.parent_span_id is not None:
                span["parentSpanId"] = ident(s.parent_span_id)
            if s.end_ns is not None:
                span["endTimeUnixNano"] = str(s.end_ns)
            if s.status != "UNSET":
                span["status"]["code"] = f"STATUS_CODE_{s.status}" if tempo else STATUS_CODES.index(s.status)
            if s.status_message:
                span["status"]["message"] = s.status_message
            out.append(span)
        resource_spans.append(
            {
                "resource": {"attributes": _attrs_json(resource)},
                "scopeSpans": [{"scope": {"name": scope} if scope else {}, "spans": out}],
            }
        )
    return {"resourceSpans": resource_spans}


def _dump(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


# --- OTLP protobuf -------------------------------------------------------------------------------


def _any_pb(value: Any) -> AnyValue:
    if value is None:
        return AnyValue()
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, (list, tuple)):
        out = AnyValue()
        out.array_value.values.extend(_any_pb(v) for v in value)
        return out
    if isinstance(value, dict):
        out = AnyValue()
        out.kvlist_value.values.extend(_attrs_pb(value))
        return out
    raise TypeError(f"cannot write {type(value).__name__}")


def _attrs_pb(attrs: Any) -> list[KeyValue]:
    return [KeyValue(key=k, value=_any_pb(v)) for k, v in attrs.items()]


def otlp_proto_request(spans: Sequence[Span]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    for resource, scope, group in _groups(spans):
        rs = request.resource_spans.add()
        rs.resource.attributes.extend(_attrs_pb(resource))
        ss = rs.scope_spans.add()
        ss.scope.name = scope
        for s in group:
            sp = ss.spans.add()
            sp.trace_id = bytes.fromhex(s.trace_id)
            sp.span_id = bytes.fromhex(s.span_id)
            if s.parent_span_id:
                sp.parent_span_id = bytes.fromhex(s.parent_span_id)
            sp.name = s.name
            sp.kind = SPAN_KINDS.index(s.kind)  # type: ignore[assignment]
            sp.start_time_unix_nano = s.start_ns
            sp.end_time_unix_nano = s.end_ns or 0
            sp.attributes.extend(_attrs_pb(s.attributes))
            sp.status.code = STATUS_CODES.index(s.status)  # type: ignore[assignment]
            sp.status.message = s.status_message
            for e in s.events:
                ev = sp.events.add()
                ev.name = e.name
                ev.time_unix_nano = e.time_ns
                ev.attributes.extend(_attrs_pb(e.attributes))
            for ln in s.links:
                link = sp.links.add()
                link.trace_id = bytes.fromhex(ln.trace_id)
                link.span_id = bytes.fromhex(ln.span_id)
                link.attributes.extend(_attrs_pb(ln.attributes))
    return request


def _chunks(spans: Sequence[Span], n: int) -> list[Sequence[Span]]:
    size = max(1, -(-len(spans) // n))
    return [spans[i : i + size] for i in range(0, len(spans), size)]


def otlp_proto_file(spans: Sequence[Span], messages: int = 3) -> bytes:
    """The Collector file exporter's ``proto`` format: 4-byte big-endian length, then the message."""
    out = b""
    for chunk in _chunks(spans, messages):
        body = otlp_proto_request(chunk).SerializeToString()
        out += struct.pack(">I", len(body)) + body
    return out


# --- everything ----------------------------------------------------------------------------------


def render(fmt: str, spans: Sequence[Span]) -> bytes:
    """``spans`` in format ``fmt`` (one of ``FORMATS``)."""
    if fmt == "otlp_json":
        return _dump(otlp_request(spans))
    if fmt == "otlp_jsonl":
        return b"".join(_dump(otlp_request(c)) + b"\n" for c in _chunks(spans, 3))
    if fmt == "otlp_proto":
        return otlp_proto_request(spans).SerializeToString()
    if fmt == "otlp_proto_file":
        return otlp_proto_file(spans)
    if fmt in JAEGER_FORMATS:
        return _recorded_jaeger(fmt, spans)
    if fmt == "tempo_v1":
        return _dump({"batches": otlp_request(spans, tempo=True)["resourceSpans"]})
    if fmt == "tempo_v2":
        return _dump({"trace": otlp_request(spans, tempo=True)})
    raise ValueError(f"unknown format {fmt!r}")


def render_all(spans: Sequence[Span], formats: Sequence[str] = FORMATS) -> Iterator[tuple[str, bytes]]:
    """``(format_name, bytes)`` for every format in ``formats``."""
    for fmt in formats:
        yield fmt, render(fmt, spans)


# --- a trace that every format carries -----------------------------------------------------------


def parity_trace() -> list[Span]:
    """A deterministic agent trace (agent, plan, LLM call, tool calls, a sub-agent in a tool) that
    every format carries: microsecond-aligned times, scalar attributes, ref-typed links on non-roots."""
    from toolspan import semconv as sc
    from toolspan.bridge.model import SpanEvent, SpanLink

    tid = "0000000000000000a1b2c3d4e5f60718"  # high half zero: Jaeger prints it as 16 hex chars
    t0 = 1_700_000_000_000_000_000
    ms = 1_000_000
    res = {sc.SERVICE_NAME: "agent-svc", "deployment.environment": "test", "host.cpus": 8}
    sub_res = {sc.SERVICE_NAME: "summarizer-svc"}

    def sid(n: int) -> str:
        return f"{n:016x}"

    def tool(
        n: int, parent: int, name: str, state: str, start: int, end: int, **extra: Any
    ) -> dict[str, Any]:
        args = json.dumps({"query": f"{name} input", "limit": 3})
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: name,
            sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
            sc.GEN_AI_TOOL_DESCRIPTION: f"The {name} tool",
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: args,
            sc.TOOLSPAN_EXECUTION_ID: sc.EXECUTION_ID_PREFIX + sid(n),
            sc.TOOLSPAN_TOOL_STATE: state,
            sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL,
            sc.OI_TOOL_NAME: name,
            sc.OI_INPUT_VALUE: args,
            **extra,
        }
        return {
            "n": n,
            "parent": parent,
            "name": sc.TOOL_SPAN_PREFIX + name,
            "start": start,
            "end": end,
            "attrs": attrs,
        }

    specs = [
        {
            "n": 1,
            "parent": None,
            "name": sc.AGENT_SPAN_PREFIX + "planner",
            "start": 0,
            "end": 900,
            "attrs": {
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: "planner",
                sc.GEN_AI_CONVERSATION_ID: "conv-1",
                sc.GEN_AI_INPUT_MESSAGES: json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "Find the release notes"}]}]
                ),
                sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Here they are."}]}]
                ),
                sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_AGENT,
            },
            "events": [
                SpanEvent(sc.THOUGHT_EVENT, t0 + 5 * ms, {sc.THOUGHT_CONTENT: "Plan first, then search."})
            ],
        },
        {
            "n": 2,
            "parent": 1,
            "name": sc.PLAN_SPAN_PREFIX + "research",
            "start": 10,
            "end": 880,
            "attrs": {sc.TOOLSPAN_PLAN_NAME: "research", sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_CHAIN},
        },
        {
            "n": 3,
            "parent": 2,
            "name": "chat gpt-4o",
            "start": 20,
            "end": 120,
            "kind": "CLIENT",
            "attrs": {
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_REQUEST_MODEL: "gpt-4o",
                sc.GEN_AI_USAGE_INPUT_TOKENS: 812,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 64,
                "gen_ai.request.temperature": 0.25,
                sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_LLM,
            },
            "status": ("OK", ""),
        },
        tool(
            4,
            2,
            "search",
            sc.STATE_COMPLETED,
            130,
            600,
            **{
                sc.GEN_AI_TOOL_CALL_ID: "call_model_0001",
                sc.TOOLSPAN_TOOL_CALL_ID: "call_model_0001",
                sc.GEN_AI_TOOL_CALL_RESULT: json.dumps({"hits": ["notes-1.2.md"], "total": 1}),
                sc.OI_OUTPUT_VALUE: json.dumps({"hits": ["notes-1.2.md"], "total": 1}),
            },
        )
        | {
            "events": [
                SpanEvent(sc.PERMISSION_REQUIRED_EVENT, t0 + 131 * ms, {}),
                SpanEvent(
                    sc.PERMISSION_DECIDED_EVENT,
                    t0 + 140 * ms,
                    {sc.PERMISSION_DECISION: "allow", sc.PERMISSION_NOTE: "read-only"},
                ),
            ],
            "links": [
                SpanLink(
                    "00000000000000000000000000000abc", sid(0xABC), {"opentracing.ref_type": "follows_from"}
                )
            ],
        },
        tool(
            5,
            2,
            "fetch",
            sc.STATE_FAILED,
            610,
            700,
            **{sc.TOOLSPAN_TOOL_CALL_ID: "call_" + sid(5), sc.ERROR_TYPE: "TimeoutError", "retry.count": 2},
        )
        | {
            "status": ("ERROR", "TimeoutError: fetch timed out"),
            "events": [
                SpanEvent(
                    sc.EXCEPTION_EVENT,
                    t0 + 699 * ms,
                    {
                        sc.EXCEPTION_TYPE: "TimeoutError",
                        sc.EXCEPTION_MESSAGE: "fetch timed out",
                        "escaped": True,
                    },
                )
            ],
        },
        {
            "n": 6,
            "parent": 4,
            "name": sc.AGENT_SPAN_PREFIX + "summarizer",
            "start": 200,
            "end": 590,
            "resource": sub_res,
            "scope": "other.instrumentation",
            "attrs": {
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: "summarizer",
                sc.TOOLSPAN_PARENT_EXECUTION_ID: sc.EXECUTION_ID_PREFIX + sid(4),
                sc.TOOLSPAN_PARENT_TOOL_CALL_ID: "call_model_0001",
                sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_AGENT,
            },
        },
        tool(
            7,
            6,
            "delete_file",
            sc.STATE_DENIED,
            300,
            400,
            **{sc.TOOLSPAN_TOOL_CALL_ID: "call_" + sid(7), sc.ERROR_TYPE: "PermissionDenied"},
        )
        | {
            "resource": sub_res,
            "scope": "other.instrumentation",
            "events": [
                SpanEvent(sc.PERMISSION_REQUIRED_EVENT, t0 + 301 * ms, {}),
                SpanEvent(sc.PERMISSION_DECIDED_EVENT, t0 + 350 * ms, {sc.PERMISSION_DECISION: "deny"}),
            ],
        },
    ]
    spans = []
    for spec in specs:
        status, message = spec.get("status", ("UNSET", ""))
        spans.append(
            Span(
                trace_id=tid,
                span_id=sid(spec["n"]),
                parent_span_id=None if spec["parent"] is None else sid(spec["parent"]),
                name=spec["name"],
                start_ns=t0 + spec["start"] * ms + 7_000,
                end_ns=t0 + spec["end"] * ms + 3_000,
                kind=spec.get("kind", "INTERNAL"),
                status=status,
                status_message=message,
                attributes=spec["attrs"],
                events=tuple(spec.get("events", ())),
                links=tuple(spec.get("links", ())),
                resource=spec.get("resource", res),
                scope=spec.get("scope", sc.SCOPE_NAME),
            )
        )
    return spans


# --- what Jaeger changes ---------------------------------------------------------------------------


def jaeger_changes_trace() -> list[Span]:
    """A deterministic trace with everything Jaeger's query API changes or drops (recorded from the real
    Jaeger by ``tests/e2e/test_jaeger_recordings.py``): times below the microsecond, array and map
    attributes, a link with attributes, events whose name order is not their time order, a pending record
    (a span exported at its start with no end) beside its ended record, an error status with a message."""
    from toolspan import semconv as sc
    from toolspan.bridge.model import SpanEvent, SpanLink

    tid = "5eb6c1f0a1b2c3d4e5f60718293a4b5c"
    t0 = 1_700_000_000_000_000_000 + 123  # not a whole microsecond
    ms = 1_000_000
    res = {sc.SERVICE_NAME: "changes-svc", "host.cpus": 4}
    agent = Span(
        trace_id=tid,
        span_id="a000000000000001",
        parent_span_id=None,
        name=sc.AGENT_SPAN_PREFIX + "planner",
        start_ns=t0,
        end_ns=t0 + 90 * ms + 456,
        kind="INTERNAL",
        status="UNSET",
        status_message="",
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "planner"},
        # "toolspan.thought" before "exception" in time, after it by name (Jaeger sorts by name)
        events=(
            SpanEvent(sc.THOUGHT_EVENT, t0 + 1 * ms + 7, {sc.THOUGHT_CONTENT: "look it up"}),
            SpanEvent(sc.EXCEPTION_EVENT, t0 + 5 * ms + 9, {sc.EXCEPTION_TYPE: "Warning"}),
        ),
        links=(),
        resource=res,
        scope=sc.SCOPE_NAME,
    )
    tool = Span(
        trace_id=tid,
        span_id="a000000000000002",
        parent_span_id=agent.span_id,
        name=sc.TOOL_SPAN_PREFIX + "search",
        start_ns=t0 + 10 * ms + 501,
        end_ns=t0 + 60 * ms + 499,
        kind="INTERNAL",
        status="ERROR",
        status_message="TimeoutError: search timed out",
        attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: "search",
            sc.TOOLSPAN_EXECUTION_ID: sc.EXECUTION_ID_PREFIX + "a000000000000002",
            sc.TOOLSPAN_TOOL_STATE: sc.STATE_FAILED,
            "search.engines": ["web", "news"],
            "search.shards": [3, 5, 8],
            "search.options": {"safe": True, "region": "eu"},
        },
        events=(),
        links=(SpanLink("7f00000000000000000000000000000a", "b00000000000000a", {"link.reason": "source"}),),
        resource=res,
        scope=sc.SCOPE_NAME,
    )
    pending = dataclasses.replace(
        tool,
        end_ns=None,
        status="UNSET",
        status_message="",
        attributes={k: v for k, v in tool.attributes.items() if k != sc.TOOLSPAN_TOOL_STATE},
    )
    return [pending, tool, agent]


# --- recorded real Jaeger responses --------------------------------------------------------------

JAEGER_VERSION = "2.12.0"
JAEGER_FIXTURES = TESTS / "fixtures" / "jaeger"
# Each recorded trace: the spans sent to the real Jaeger, and the name of its recorded answers.
JAEGER_RECORDED = {"parity": parity_trace, "changes": jaeger_changes_trace}


def jaeger_recording(name: str, api: str) -> Path:
    """The real Jaeger's recorded answer (``api`` ``v1``: ``/api/traces/{id}``, ``v3``: ``/api/v3/...``)."""
    return JAEGER_FIXTURES / f"jaeger-{JAEGER_VERSION}-{name}-{api}.json"


def _order(spans: Sequence[Span]) -> list[Span]:
    bare = (dataclasses.replace(s, origin="") for s in spans)
    return sorted(bare, key=lambda s: (s.trace_id, s.span_id, s.end_ns is None))


def _recorded_jaeger(fmt: str, spans: Sequence[Span]) -> bytes:
    key = _order(spans)
    for name, make in JAEGER_RECORDED.items():
        if _order(make()) == key:
            body = jaeger_recording(name, "v3" if fmt == "jaeger_v3" else "v1").read_bytes()
            if fmt == "jaeger_v1_bare":  # the trace object alone, as the Jaeger UI's "download" writes it
                return json.dumps(json.loads(body)["data"][0], indent=2).encode("utf-8")
            return body
    raise ValueError(
        f"no recorded Jaeger answer holds these spans ({fmt}): see tests/e2e/test_jaeger_recordings.py"
    )
