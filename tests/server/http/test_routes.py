"""Every route of ``toolspan serve`` and every answer it gives, in this process: the ASGI application
(``build_app``) over a temporary store, no server, no socket.

``CASES`` holds, for each route of the table (``registry.ROUTES``), a request for each answer it can give: its
success, what every route refuses (no token, a wrong one, a token that may not, a ``Host`` it does not serve,
a method it does not take, an address throttled for guessing tokens) and what it refuses of its own (an
unknown or malformed id, a parameter that is not what it says, a body too large, of the wrong type, cut off,
or a decision that cannot be taken). Two tests hold the table to the server: each case gets the status it
names (and a JSON body naming the same status when refused), and each route's cases are exactly the answers
the OpenAPI document states for it, no more and no fewer (405, which OpenAPI does not list, for every route).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from tests.server.test_control_hostile import waiting_span
from tests.support.asgi import AsgiAnswer, AsgiClient
from tests.support.bridge_data import CONVERSATION, scenario
from tests.support.formats import otlp_proto_request, otlp_request
from toolspan._util.ids import arguments_sha256
from toolspan.server import ServerConfig, build_app, open_store
from toolspan.server._http.auth import DECIDE, INGEST, PUBLIC
from toolspan.server._http.endpoints import Endpoint
from toolspan.server._http.registry import ROUTES
from toolspan.server._http.routes.control.writes import MAX_BODY as CONTROL_MAX_BODY

APP: Final = "app-token-routes"
DECIDER: Final = "decider-token-routes"
AUTH_FAILURES: Final = 3
MAX_BODY: Final = 64 * 1024
SPANS: Final = scenario()
TRACE: Final = SPANS[0].trace_id
ENDED_TOOL: Final = SPANS[1].span_id  # search_flights, ended
WAITING_TRACE: Final = "c" * 32
ARGUMENTS: Final = '{"amount": 1}'
# A waiting call for each write that changes it, so the cases stand alone in any order.
ALLOWED, CONFLICT, EDITED, STILL_WAITING = "d" * 16, "e" * 16, "a" * 16, "f" * 16
# Running calls (no approval asked): one for each cancel that changes it.
RUNNING, CANCELLED = "1" * 16, "b" * 16
UNKNOWN_CALL: Final = "7" * 16
UNKNOWN_TRACE: Final = "9" * 32

# A case's request: the client, and the address it comes from (each case its own, so that its wrong
# tokens throttle no other case).
Send = Callable[[AsgiClient, str], AsgiAnswer]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _json_headers(token: str) -> dict[str, str]:
    return {**_bearer(token), "Content-Type": "application/json"}


@dataclass(frozen=True)
class Case:
    """One request to one route and the status it must get."""

    route: tuple[str, str]  # (method, path as the OpenAPI document writes it)
    status: int
    what: str
    send: Send = field(compare=False)

    @property
    def id(self) -> str:
        return f"{self.route[0]} {self.route[1]} {self.status} {self.what}"


def _path(endpoint: Endpoint, ident: str | None = None) -> str:
    """The route's path with a stored trace, conversation, job or waiting call in it (or ``ident``)."""
    return (
        endpoint.path.replace("{trace_id:str}", ident or TRACE)
        .replace("{job_id:str}", ident or TRACE)
        .replace("{conversation_id:str}", ident or CONVERSATION)
        .replace("{execution_id:str}", ident or f"exec_{STILL_WAITING}")
    )


def _get(path: str, headers: dict[str, str], *, sse: bool) -> Send:
    return lambda c, a: c.request("GET", path, headers=headers, head_only=sse, client=a, within=10)


def _post(path: str, body: bytes, headers: dict[str, str], *, stalls: bool = False) -> Send:
    return lambda c, a: c.request("POST", path, body, headers, stalls=stalls, client=a, within=10)


def _throttled(endpoint: Endpoint) -> Send:
    """The right token, from an address that has just sent ``AUTH_FAILURES`` wrong ones."""

    def send(c: AsgiClient, address: str) -> AsgiAnswer:
        for _ in range(AUTH_FAILURES):
            c.request(endpoint.method, _path(endpoint), headers=_bearer("wrong"), client=address, within=10)
        token = DECIDER if endpoint.need == DECIDE else APP
        return c.request(endpoint.method, _path(endpoint), headers=_bearer(token), client=address, within=10)

    return send


def _shared(endpoint: Endpoint) -> list[tuple[int, str, Send]]:
    """What every route answers alike: no token, a wrong one, a token that may not, a Host it does not
    serve, a method it does not take, a throttled address."""
    sse = endpoint.media == "text/event-stream"
    path = _path(endpoint)
    send = (
        (lambda h: _post(path, b"{}", h)) if endpoint.method == "POST" else (lambda h: _get(path, h, sse=sse))
    )
    out: list[tuple[int, str, Send]] = [
        (403, "a Host it does not serve", send({**_bearer(APP), "Host": "evil.example"})),
        (
            405,
            "a method it does not take",
            lambda c, a: c.request("DELETE", path, headers=_bearer(APP), client=a, within=10),
        ),
    ]
    if endpoint.need == PUBLIC:
        return out
    out.append((429, "an address that guessed tokens", _throttled(endpoint)))
    if not endpoint.page:  # a page is served without its data instead
        out.append((401, "a wrong token", send(_bearer("wrong"))))
        if endpoint.path != "/api/whoami":  # which answers who a request without one is: nobody
            out.append((401, "no token", send({})))
    if endpoint.need == INGEST:
        out.append((403, "a decider's token", send(_bearer(DECIDER))))
    if endpoint.need == DECIDE:
        out.append((403, "the application's token", send(_json_headers(APP))))
    return out


def _decision(span_id: str, decision: str, **extra: Any) -> bytes:
    body = {
        "execution_id": f"exec_{span_id}",
        "trace_id": WAITING_TRACE,
        "decision": decision,
        "shown": arguments_sha256(ARGUMENTS),
        **extra,
    }
    return json.dumps(body).encode()


def _twice(path: str, first: bytes, then: bytes) -> Send:
    """``then``, once ``first`` was taken."""

    def send(c: AsgiClient, address: str) -> AsgiAnswer:
        answer = c.request("POST", path, first, _json_headers(DECIDER), client=address, within=10)
        assert answer.status in (200, 202), answer.body[:300]
        return c.request("POST", path, then, _json_headers(DECIDER), client=address, within=10)

    return send


def _otlp_json() -> bytes:
    return json.dumps(otlp_request(SPANS)).encode()


def _full_disk(path: str, body: bytes) -> Send:
    """An export of new records while SQLite finds the disk full (``max_page_count`` at the file's size)."""

    def send(c: AsgiClient, address: str) -> AsgiAnswer:
        db = STORE[0]._db
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
        try:
            return c.request("POST", path, body, _json_headers(APP), client=address, within=10)
        finally:
            db.execute("PRAGMA max_page_count = 1073741823")

    return send


def _logs(text: str) -> bytes:
    """An OTLP JSON logs export: one record of the scenario's first tool call, saying ``text``."""
    record = {
        "timeUnixNano": str(SPANS[1].start_ns + 1),
        "traceId": TRACE,
        "spanId": ENDED_TOOL,
        "eventName": "gen_ai.client.inference.operation.details",
        "body": {"stringValue": text},
    }
    return json.dumps({"resourceLogs": [{"resource": {}, "scopeLogs": [{"logRecords": [record]}]}]}).encode()


def _ingest_cases(path: str) -> list[tuple[int, str, Send]]:
    traces = path == "/v1/traces"
    ok = _otlp_json() if traces else _logs("a log record")
    fresh = [dataclasses.replace(s, trace_id="8" * 32) for s in SPANS]  # new rows, for the full disk
    proto = otlp_proto_request(SPANS).SerializeToString()
    cases: list[tuple[int, str, Send]] = [
        (200, "OTLP JSON", _post(path, ok, _json_headers(APP))),
        (200, "gzipped", _post(path, gzip.compress(ok), {**_json_headers(APP), "Content-Encoding": "gzip"})),
        (
            400,
            "not OTLP",
            _post(path, b"\x00garbage", {**_bearer(APP), "Content-Type": "application/x-protobuf"}),
        ),
        (408, "a body that stops coming", _post(path, ok[:10], _json_headers(APP), stalls=True)),
        (413, "a body over --max-body", _post(path, b" " * (MAX_BODY + 1), _json_headers(APP))),
        (415, "text/plain", _post(path, ok, {**_bearer(APP), "Content-Type": "text/plain"})),
        (
            503,
            "a full disk",
            _full_disk(path, json.dumps(otlp_request(fresh)).encode() if traces else _logs("x" * 30_000)),
        ),
    ]
    if traces:
        cases.append(
            (
                200,
                "OTLP protobuf",
                _post(path, proto, {**_bearer(APP), "Content-Type": "application/x-protobuf"}),
            )
        )
    return cases


def _call(span_id: str, trace_id: str = WAITING_TRACE) -> bytes:
    return json.dumps({"execution_id": f"exec_{span_id}", "trace_id": trace_id}).encode()


def _control_cases(endpoint: Endpoint) -> list[tuple[int, str, Send]]:
    path, h = endpoint.path, _json_headers(DECIDER)
    decisions = path == "/api/control/decisions"
    unknown = _decision(UNKNOWN_CALL, "deny") if decisions else _call(UNKNOWN_CALL)
    common: list[tuple[int, str, Send]] = [
        (400, "a field missing", _post(path, b"{}", h)),
        (404, "an unknown call", _post(path, unknown, h)),
        (408, "a body that stops coming", _post(path, b'{"exec', h, stalls=True)),
        (413, "a body over the control channel's limit", _post(path, b" " * (CONTROL_MAX_BODY + 1), h)),
        (415, "text/plain", _post(path, b"{}", {**_bearer(DECIDER), "Content-Type": "text/plain"})),
    ]
    if decisions:
        edit = _decision(EDITED, "allow", arguments={"amount": 2})
        return [
            *common,
            (200, "the first decision", _post(path, _decision(ALLOWED, "allow"), h)),
            (
                409,
                "another after it",
                _twice(path, _decision(CONFLICT, "allow"), _decision(CONFLICT, "deny")),
            ),
            (422, "an edit with no schema to check it", _post(path, edit, h)),
        ]
    return [
        *common,
        (202, "a running call", _post(path, _call(RUNNING), h)),
        (200, "the same request again", _twice(path, _call(CANCELLED), _call(CANCELLED))),
        (409, "a call that ended", _post(path, _call(ENDED_TOOL, TRACE), h)),
        (409, "a call that waits for its approval", _post(path, _call(STILL_WAITING), h)),
    ]


def _own(endpoint: Endpoint) -> list[tuple[int, str, Send]]:
    """The route's own answers: its success and what it alone refuses."""
    sse = endpoint.media == "text/event-stream"
    token = DECIDER if endpoint.need == DECIDE else APP
    if endpoint.path in ("/v1/traces", "/v1/logs"):
        return _ingest_cases(endpoint.path)
    if endpoint.path in ("/api/control/decisions", "/api/control/cancels") and endpoint.method == "POST":
        return _control_cases(endpoint)
    if endpoint.path == "/api/ag-ui":
        run = {
            "threadId": "t-1",
            "runId": "r-1",
            "messages": [],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {"traceId": TRACE},
        }
        return [
            (
                200,
                "a run of a stored trace",
                lambda c, a: c.request(
                    "POST",
                    "/api/ag-ui",
                    json.dumps(run).encode(),
                    _json_headers(APP),
                    head_only=True,
                    client=a,
                    within=10,
                ),
            ),
            (400, "no threadId", _post("/api/ag-ui", b"{}", _json_headers(APP))),
        ]
    ok = 307 if endpoint.path == "/" else 200
    cases: list[tuple[int, str, Send]] = [
        (ok, "the right token", _get(_path(endpoint), _bearer(token), sse=sse))
    ]
    if endpoint.page:
        cases.append((ok, "no token (a browser's first load)", _get(_path(endpoint), {}, sse=False)))
    if endpoint.path == "/api/whoami":
        cases.append((200, "no token: nobody", _get(_path(endpoint), {}, sse=False)))
    return cases + _refusals(endpoint, sse)


def _refusals(endpoint: Endpoint, sse: bool) -> list[tuple[int, str, Send]]:
    h = _bearer(APP)
    path = _path(endpoint)
    out: list[tuple[int, str, Send]] = []
    names = endpoint.path_params
    if "trace_id" in names or "job_id" in names:
        if sse:
            out.append((404, "not a trace id", _get(_path(endpoint, "not-a-trace!"), h, sse=True)))
        else:
            out.append((404, "an unknown trace", _get(_path(endpoint, UNKNOWN_TRACE), h, sse=False)))
    if "conversation_id" in names and not sse:
        out.append(
            (404, "an unknown conversation", _get(_path(endpoint, "no-such-conversation"), h, sse=False))
        )
    if "execution_id" in names:
        out.append((400, "not an execution id", _get(_path(endpoint, "exec_zz"), h, sse=False)))
    if sse:
        resume = "cursor=zz" if endpoint.path.endswith(("}/stream", "/api/stream")) else "since=-1"
        if endpoint.path.endswith("/page/stream"):
            resume = "version=zz"
        out.append((400, f"?{resume}", _get(f"{path}?{resume}", h, sse=True)))
        out.append(
            (400, "a Last-Event-ID it did not send", _get(path, {**h, "Last-Event-ID": "garbage!"}, sse=True))
        )
    bad_params = {
        "/api/traces": "limit=abc",
        "/api/control/waiting": "after=x",
        "/api/control/decisions/{execution_id:str}": "wait=abc",
        "/api/control/cancels": "wait=abc",
    }
    if endpoint.path in bad_params and endpoint.method == "GET":
        query = bad_params[endpoint.path]
        out.append((400, f"?{query}", _get(f"{path}?{query}", h, sse=False)))
    return out


def _cases() -> list[Case]:
    cases = []
    for endpoint in ROUTES:
        route = (endpoint.method, endpoint.documented_path)
        for status, what, send in _own(endpoint) + _shared(endpoint):
            cases.append(Case(route, status, what, send))
    return cases


CASES: Final = _cases()
STORE: list[Any] = []


def _pending(span_id: str, *, running: bool = False) -> dict[str, Any]:
    span = waiting_span(WAITING_TRACE, span_id, call_id=f"toolu_{span_id[:4]}", arguments=ARGUMENTS)
    if running:
        span["events"] = []
    return span


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AsgiClient]:
    """The application over a store holding the scenario's two traces and calls waiting for decisions."""
    store = open_store(str(tmp_path_factory.mktemp("routes") / "store.db"))
    STORE.append(store)
    try:
        store.ingest(SPANS)
        waiting = [_pending(s) for s in (ALLOWED, CONFLICT, EDITED, STILL_WAITING)]
        waiting += [_pending(RUNNING, running=True), _pending(CANCELLED, running=True)]
        doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": waiting}]}]}
        from toolspan.bridge.readers import spans_from_document

        store.ingest(spans_from_document(doc))
        config = ServerConfig(
            db=store.path,
            parse_workers=0,
            token=APP,
            deciders=(("alice", DECIDER),),
            max_body_bytes=MAX_BODY,
            auth_failures=AUTH_FAILURES,
            read_timeout_s=0.2,
        )
        app, _ = build_app(config, store)
        with AsgiClient(app) as found:
            yield found
    finally:
        STORE.clear()
        store.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_route_gives_each_answer_its_case_names(client: AsgiClient, case: Case) -> None:
    n = CASES.index(case)
    answer = case.send(client, f"10.0.{n // 250}.{n % 250 + 1}")
    assert answer.status == case.status, (case.id, answer.status, answer.body[:300])
    if case.status >= 400:
        assert _refusal_text(answer), (case.id, answer.headers, answer.body[:300])
    if case.status == 429:
        assert int(answer.headers["retry-after"]) > 0, answer.headers


def _refusal_text(answer: AsgiAnswer) -> str:
    """What a refusal says: a JSON body's ``error`` (and its ``status``, the answer's), or an OTLP export's
    ``google.rpc.Status`` message (JSON or protobuf, as the export was sent)."""
    if answer.headers.get("content-type", "").startswith("application/x-protobuf"):
        from google.rpc.status_pb2 import Status

        status = Status()
        status.ParseFromString(answer.body)
        return str(status.message)
    body = answer.json()
    if "code" in body:  # an OTLP/JSON export's google.rpc.Status
        return str(body["message"])
    assert body["status"] == answer.status, body
    return str(body["error"])


def _documented() -> dict[tuple[str, str], set[int]]:
    from toolspan.server._http.routes.openapi import document

    out: dict[tuple[str, str], set[int]] = {}
    for path, operations in document(ROUTES)["paths"].items():
        for method, operation in operations.items():
            out[(method.upper(), path)] = {int(code) for code in operation["responses"]} | {405}
    return out


def test_each_routes_cases_are_exactly_the_answers_its_openapi_description_states() -> None:
    tested: dict[tuple[str, str], set[int]] = defaultdict(set)
    for case in CASES:
        tested[case.route].add(case.status)
    documented = _documented()
    assert set(tested) == set(documented)
    differ = {
        f"{m} {p}": {
            "untested": sorted(documented[(m, p)] - tested[(m, p)]),
            "undocumented": sorted(tested[(m, p)] - documented[(m, p)]),
        }
        for (m, p) in documented
        if documented[(m, p)] != tested[(m, p)]
    }
    assert not differ, json.dumps(differ, indent=1)
