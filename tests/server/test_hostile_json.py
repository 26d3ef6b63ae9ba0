"""Property tests (hypothesis) over hostile JSON for every route of a real ``toolspan serve`` that takes a
body or a cursor: the control channel's decisions and cancels, ``POST /api/ag-ui``, OTLP/JSON ingest of spans
and of logs, and the cursors, ``since``, ``Last-Event-ID``, ``wait``, ``after``, ``limit`` and the call named
(``call_id``, ``tool``, ``shown``) of the streams, the inbox and the long polls. Whatever
arrives (``NaN``, ``Infinity``, ``1e999``, lone surrogates, nesting thousands deep, text cut anywhere, bytes
that are no UTF-8), the answer is the route's success or a precise 4xx with the server's JSON error and the
security headers, never a 500; a refused request stores nothing; the server goes on serving."""

from __future__ import annotations

import http.client
import json
import math
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.test_control_hostile import ingest, waiting_span
from tests.server.test_control_live import AUTH, DECIDER_ARGS, DECIDERS, TOKEN
from tests.support.server import HOST, Server, running_server

pytestmark = pytest.mark.processes

PROBES = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TRACE = "c" * 32
SPAN = "c" * 16
DECIDED_TRACE = "e" * 32
DECIDED_SPAN = "e" * 16
# The four AG-UI and AI SDK UI message streams, of a trace and of a conversation.
FRONTEND_STREAMS = tuple(
    f"/api/{whose}/{TRACE}/{protocol}/stream"
    for whose in ("traces", "conversations")
    for protocol in ("ag-ui", "ai-sdk")
)

# --- hostile JSON ------------------------------------------------------------------------------------------

_TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["\ud800", "x\udfffy", "\U0001f600", "\x00", "\u2028", "</script>", "exec_" + SPAN]),
)
_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(float("nan")),
    st.just(float("inf")),
)
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=12,
)


def _dump(value: Any, ascii_only: bool) -> bytes:
    """JSON text as a careless or hostile client writes it: ``NaN``/``Infinity`` as is, lone surrogates as
    escapes (ASCII) or as the bytes Python would refuse to write (then their surrogate-escaped UTF-8)."""
    text = json.dumps(value, allow_nan=True, ensure_ascii=ascii_only)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def hostile_bodies(draw: st.DrawFn, fields: dict[str, Any]) -> bytes:
    """A body for a route taking ``fields``: well-formed objects with hostile values in any field, deep
    nesting, JSON cut anywhere, numbers past a double, bytes that are no JSON or no UTF-8."""
    kind = draw(st.sampled_from(["object", "object", "object", "deep", "cut", "huge-number", "bytes"]))
    if kind == "object":
        doc = {k: draw(st.one_of(st.just(v), _VALUES)) for k, v in fields.items() if draw(st.booleans())}
        if draw(st.booleans()):
            doc[draw(_TEXT)] = draw(_VALUES)
        return _dump(doc, draw(st.booleans()))
    if kind == "deep":
        levels = draw(st.integers(1, 5000))
        inner = "[" * levels + "]" * levels
        key = draw(st.sampled_from(sorted(fields)))
        return f'{{"{key}": {inner}}}'.encode()
    if kind == "cut":
        whole = _dump(fields, True)
        return whole[: draw(st.integers(0, len(whole)))]
    if kind == "huge-number":
        key = draw(st.sampled_from(sorted(fields)))
        number = draw(
            st.sampled_from(["1e999", "-1e999", "9" * 5000, "1" + "0" * 400 + ".5", "NaN", "-Infinity"])
        )
        return f'{{"{key}": {number}}}'.encode()
    return draw(st.binary(max_size=300))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("hostile-json"), "--token", TOKEN, *DECIDER_ARGS) as srv:
        srv.headers = dict(AUTH)
        ingest(srv, [waiting_span(TRACE, SPAN, call_id="toolu_prop", tool="transfer")])
        # The decision bodies' probes decide a call of their own (a well-formed one is stored): the call
        # the other probes name stays undecided whatever they drew.
        ingest(srv, [waiting_span(DECIDED_TRACE, DECIDED_SPAN, call_id="toolu_probed", tool="transfer")])
        yield srv


def _checked(status: int, headers: dict[str, str], body: bytes, allowed: set[int]) -> Any:
    assert status in allowed, (status, body[:300])
    headers = {k.lower(): v for k, v in headers.items()}
    assert headers.get("x-content-type-options") == "nosniff", headers
    if status >= 400:
        doc = json.loads(body)
        assert doc["status"] == status
        assert isinstance(doc["error"], str)
        assert "\n" not in doc["error"]
        return doc
    return None


def _content_type(headers: dict[str, str]) -> str:
    return {k.lower(): v for k, v in headers.items()}.get("content-type", "").split(";")[0]


def _decision(server: Server, trace: str = TRACE, span: str = SPAN) -> Any:
    return server.get_json(f"/api/control/decisions/exec_{span}?trace_id={trace}")["decision"]


# --- bodies ------------------------------------------------------------------------------------------------


@PROBES
@given(data=st.data())
def test_any_decision_body_is_decided_or_a_precise_4xx(server: Server, data: st.DataObject) -> None:
    (entry,) = [
        e for e in server.get_json("/api/control/waiting")["waiting"] if e["call_id"] == "toolu_probed"
    ]
    fields = {
        "execution_id": entry["execution_id"],
        "trace_id": entry["trace_id"],
        "decision": "deny",
        "shown": entry["arguments_sha256"],
        "arguments": {"amount": 1},
        "note": "n",
    }
    body = data.draw(hostile_bodies(fields))
    before = _decision(server, DECIDED_TRACE, DECIDED_SPAN)
    status, headers, raw = server.request(
        "POST",
        "/api/control/decisions",
        body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {DECIDERS['alice']}"},
    )
    _checked(status, headers, raw, {200, 400, 404, 409, 413, 422})
    if status != 200:
        assert _decision(server, DECIDED_TRACE, DECIDED_SPAN) == before  # a refused request stores nothing


@PROBES
@given(data=st.data())
def test_any_cancel_body_is_taken_or_a_precise_4xx(server: Server, data: st.DataObject) -> None:
    body = data.draw(hostile_bodies({"execution_id": f"exec_{SPAN}", "trace_id": TRACE, "note": "n"}))
    status, headers, raw = server.request(
        "POST",
        "/api/control/cancels",
        body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {DECIDERS['bob']}"},
    )
    # (The call waits for its approval: a well-formed cancel of it is a 409.)
    doc = _checked(status, headers, raw, {400, 404, 409, 413})
    assert doc["status"] == status
    assert server.get_json(f"/api/control/cancels?execution_id=exec_{SPAN}")["cancels"] == []  # none stored
    assert _decision(server) is None  # and the call still waits, undecided


def _status_only(
    server: Server, method: str, path: str, body: bytes | None, headers: dict[str, str | bytes]
) -> Any:
    """Status, headers and (for an error) body of a request whose success is an endless stream."""
    conn = http.client.HTTPConnection(HOST, server.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers={**AUTH, **headers})
        response = conn.getresponse()
        raw = response.read() if response.status != 200 else b""
        return response.status, dict(response.getheaders()), raw
    finally:
        conn.close()


@PROBES
@given(data=st.data())
def test_any_ag_ui_body_is_a_run_stream_or_a_precise_4xx(server: Server, data: st.DataObject) -> None:
    fields = {
        "threadId": "thread-1",
        "runId": "run-1",
        "messages": [{"id": "m1", "role": "user"}],
        "state": {},
    }
    body = data.draw(hostile_bodies(fields))
    status, headers, raw = _status_only(
        server, "POST", "/api/ag-ui", body, {"Content-Type": "application/json"}
    )
    doc = _checked(status, headers, raw, {200, 400, 413})
    if doc is None:
        assert _content_type(headers) == "text/event-stream"  # the run's AG-UI stream
    else:
        assert doc["status"] in (400, 413)


@PROBES
@given(data=st.data())
def test_any_otlp_json_body_is_stored_or_a_precise_4xx_and_nothing_refused_is_kept(
    server: Server, data: st.DataObject
) -> None:
    span = waiting_span("d" * 32, "d" * 16, call_id="toolu_otlp")
    fields = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    body = data.draw(hostile_bodies(fields))
    before = server.counts()
    status, _, raw = server.post_otlp(body, "application/json")
    assert status in (200, 400), (status, raw[:300])
    if status == 400:
        assert server.counts() == before


@PROBES
@given(data=st.data())
def test_any_otlp_json_logs_body_is_stored_or_a_precise_4xx_and_nothing_refused_is_kept(
    server: Server, data: st.DataObject
) -> None:
    record = {
        "timeUnixNano": "1700000000000000000",
        "traceId": TRACE,
        "spanId": SPAN,
        "eventName": "gen_ai.assistant.message",
        "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "hi"}}]}},
        "attributes": [{"key": "gen_ai.system", "value": {"stringValue": "openai"}}],
    }
    fields = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}
    body = data.draw(hostile_bodies(fields))
    before = server.get_json("/healthz")["log_records"]
    status, _, raw = server.request("POST", "/v1/logs", body, {"Content-Type": "application/json"})
    assert status in (200, 400), (status, raw[:300])
    if status == 400:
        assert server.get_json("/healthz")["log_records"] == before


# --- cursors and numbers -----------------------------------------------------------------------------------

_CURSOR_TEXT = st.one_of(
    st.text(max_size=60),
    st.text("0123456789\u00b2\u0663-", min_size=1, max_size=30),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["9" * 5000, "nan", "1e999", "-1", "\ud800", "0x10", " 7 ", "7\x00"]),
)


def _query(name: str, value: str) -> str:
    return urllib.parse.urlencode({name: value.encode("utf-8", "surrogatepass")})


@PROBES
@given(since=_CURSOR_TEXT)
def test_any_since_on_the_ag_ui_and_ai_sdk_streams_is_a_stream_or_a_400(server: Server, since: str) -> None:
    for path in FRONTEND_STREAMS:
        status, headers, raw = _status_only(server, "GET", f"{path}?{_query('since', since)}", None, {})
        doc = _checked(status, headers, raw, {200, 400})
        if doc is not None:
            assert "since" in doc["error"], doc


@PROBES
@given(wait=_CURSOR_TEXT, trace=_CURSOR_TEXT, execution=_CURSOR_TEXT)
def test_any_long_poll_parameters_are_an_answer_or_a_400(
    server: Server, wait: str, trace: str, execution: str
) -> None:
    quick = wait if not _finite_over(wait, 0.5) else "0"
    for path in (
        f"/api/control/decisions/{urllib.parse.quote(execution.encode('utf-8', 'surrogatepass'), safe='')}"
        f"?{_query('wait', quick)}&{_query('trace_id', trace)}",
        f"/api/control/decisions/exec_{SPAN}?{_query('wait', quick)}&{_query('trace_id', trace)}",
        f"/api/control/cancels?{_query('execution_id', execution)}&{_query('wait', quick)}",
    ):
        status, headers, raw = server.request("GET", path)
        # (405: an empty execution id makes the path the decisions' POST route.)
        doc = _checked(status, headers, raw, {200, 400, 404, 405})
        if doc is None:  # an answer: the decision (none taken) or the cancels (none asked)
            answer = json.loads(raw)
            assert answer.get("decision", "absent") is None or answer.get("cancels") == [], answer


def _header(text: str) -> bytes:
    """``text`` as a header value a client can send (HTTP forbids control characters there: h11 refuses
    them before the server sees the request)."""
    kept = "".join(c for c in text if c == "\t" or not (ord(c) < 0x20 or ord(c) == 0x7F))
    return kept.encode("utf-8", "surrogatepass")


@PROBES
@given(since=_CURSOR_TEXT, last_event_id=_CURSOR_TEXT)
def test_any_since_or_last_event_id_on_the_progress_and_frontend_streams_is_a_stream_or_a_400(
    server: Server, since: str, last_event_id: str
) -> None:
    for path in (
        f"/api/traces/{TRACE}/progress/stream",
        f"/api/conversations/{TRACE}/progress/stream",
        f"/api/traces/{TRACE}/ag-ui/stream",
        f"/api/conversations/{TRACE}/ai-sdk/stream",
    ):
        status, headers, raw = _status_only(server, "GET", f"{path}?{_query('since', since)}", None, {})
        doc = _checked(status, headers, raw, {200, 400})
        if doc is None:
            assert _content_type(headers) == "text/event-stream"
        else:
            assert doc["error"].startswith("since"), doc
        header: dict[str, str | bytes] = {"Last-Event-ID": _header(last_event_id)}
        status, headers, raw = _status_only(server, "GET", path, None, header)
        doc = _checked(status, headers, raw, {200, 400})
        if doc is None:
            assert _content_type(headers) == "text/event-stream"
        else:
            assert doc["error"].startswith("Last-Event-ID"), doc


@PROBES
@given(call_id=_CURSOR_TEXT, tool=_CURSOR_TEXT, shown=_CURSOR_TEXT)
def test_any_call_named_on_the_decision_long_poll_is_an_answer_or_a_400(
    server: Server, call_id: str, tool: str, shown: str
) -> None:
    query = "&".join((_query("call_id", call_id), _query("tool", tool), _query("shown", shown)))
    status, headers, raw = server.request("GET", f"/api/control/decisions/exec_{SPAN}?wait=0&{query}")
    doc = _checked(status, headers, raw, {200, 400})
    if doc is None:
        answer = json.loads(raw)
        assert answer["decision"] is None  # nothing was decided on the call the server holds


def _finite_over(text: str, limit: float) -> bool:
    try:
        value = float(text)
    except (ValueError, OverflowError):
        return False
    return math.isfinite(value) and value > limit


@PROBES
@given(after=_CURSOR_TEXT, limit=_CURSOR_TEXT)
def test_any_inbox_page_parameters_are_a_page_or_a_400(server: Server, after: str, limit: str) -> None:
    for query in (
        _query("after", after),
        _query("limit", limit),
        f"{_query('after', after)}&{_query('limit', limit)}",
    ):
        status, headers, raw = server.request("GET", f"/api/control/waiting?{query}")
        doc = _checked(status, headers, raw, {200, 400})
        if doc is None:
            page = json.loads(raw)
            assert all(entry["execution_id"].startswith("exec_") for entry in page["waiting"]), page
        else:
            assert "after" in doc["error"] or "limit" in doc["error"], doc


def test_the_server_served_every_probe_and_still_serves(server: Server) -> None:
    assert server.get_json("/healthz")["status"] == "ok"
    assert server.proc is not None
    assert server.proc.poll() is None
    assert "Traceback" not in server.log.read_text()


# --- the examples found probing it ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"threadId": "\\ud800", "runId": "r", "messages": []}', "'threadId' holds a lone surrogate"),
        (b'{"threadId": "t", "runId": "r", "state": {"a": NaN}}', "'state.a' holds NaN"),
        (b'{"threadId": "t", "runId": "r", "state": 1e999}', "'state' holds 1e999"),
        (b'{"threadId": "t", "runId": "r", "state": ' + b"[" * 3000 + b"]" * 3000 + b"}", "nested deeper"),
    ],
)
def test_hostile_ag_ui_bodies_are_a_400_naming_the_field(server: Server, body: bytes, field: str) -> None:
    status, headers, raw = _status_only(
        server, "POST", "/api/ag-ui", body, {"Content-Type": "application/json"}
    )
    doc = _checked(status, headers, raw, {400})
    assert field in doc["error"], doc


@pytest.mark.parametrize("since", ["\u00b2", "9" * 5000, "-1", "1e3"])
def test_hostile_since_on_the_ag_ui_and_ai_sdk_streams_is_a_400(server: Server, since: str) -> None:
    for path in FRONTEND_STREAMS:
        status, headers, raw = _status_only(server, "GET", f"{path}?{_query('since', since)}", None, {})
        doc = _checked(status, headers, raw, {400})
        assert "since" in doc["error"], doc
