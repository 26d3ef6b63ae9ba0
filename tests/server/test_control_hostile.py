"""The control channel of a real ``toolspan serve``, tried as an attacker who can send spans and a careless
operator would: applications with ``ServerApprover`` (``control_live_app.py``) exporting over OTLP, waiting
calls forged over OTLP, decisions over HTTP with decider tokens. Two waiting calls that share a model call id
are two inbox entries and each runs only on its own decision; a new call is listed however many calls never
ended, and those whose application stopped asking age out; hostile values (``NaN``, ``Infinity``,
``1e999``, deep nesting, lone surrogates) in a decision are a 400 naming the field with nothing stored, and
in an ingested waiting call leave the inbox readable; a call id with ``/`` and 3,000 characters is decided;
a forged span cannot claim a wait of decades; deciding a call that ended is a 409 with its state; a ``Host``
whose port is not a number is refused. On SQLite, and on PostgreSQL with ``--store postgres``."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_control_live import (
    APP,
    AUTH,
    DECIDER_ARGS,
    TOKEN,
    _bodies,
    _decide,
    _decided,
    _finish,
    _post,
    _results,
    _tool_spans,
    _waiting,
    as_decider,
)
from tests.support.server import HOST, Server, running_server, sdk_env, wait_for
from toolspan import semconv


@pytest.fixture
def server(tmp_path: Path) -> Any:
    with running_server(tmp_path, "--token", TOKEN, *DECIDER_ARGS) as srv:
        srv.headers = dict(AUTH)
        yield srv


def _app(server: Server, workdir: Path, mode: str, name: str, service: str = "control-app") -> Any:
    env = {
        **sdk_env(server, "http/protobuf"),
        "TOOLSPAN_PENDING_SPANS": "true",
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{TOKEN}",
        "CONTROL_APP_SERVICE": service,
    }
    return subprocess.Popen([sys.executable, str(APP), str(workdir), mode, name, server.url, TOKEN], env=env)


def _entries(server: Server, **match: Any) -> list[dict[str, Any]]:
    entries = server.get_json("/api/control/waiting")["waiting"]
    return [e for e in entries if all(e.get(k) == v for k, v in match.items())]


def waiting_span(
    trace_id: str,
    span_id: str,
    *,
    call_id: str = "toolu_forged",
    tool: str = "transfer",
    arguments: str = '{"amount": 1}',
    start_ns: int = 1_000_000_000,
    end_ns: int = 0,
) -> dict[str, Any]:
    """An OTLP JSON span of a tool call that asks for its approval (a pending record: no end), as an
    attacker with the application's token would send it."""

    def text(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": f"execute_tool {tool}",
        "kind": 1,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(end_ns),
        "attributes": [
            text(semconv.GEN_AI_OPERATION_NAME, "execute_tool"),
            text(semconv.GEN_AI_TOOL_NAME, tool),
            text(semconv.GEN_AI_TOOL_CALL_ID, call_id),
            text(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, arguments),
        ],
        "events": [{"timeUnixNano": str(start_ns + 1), "name": semconv.PERMISSION_REQUIRED_EVENT}],
    }


def ingest(server: Server, spans: list[dict[str, Any]], service: str = "forger") -> None:
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
                "scopeSpans": [{"scope": {"name": "forger"}, "spans": spans}],
            }
        ]
    }
    status, _, body = server.post_otlp(json.dumps(doc).encode(), "application/json")
    assert status == 200, body
    assert b"rejected" not in body, body


@pytest.mark.processes
def test_two_waiting_calls_with_one_call_id_are_two_entries_each_given_only_its_own_decision(
    server: Server, tmp_path: Path
) -> None:
    small = _app(server, tmp_path, "pay-small", "small", "bank-a")
    big = _app(server, tmp_path, "pay-big", "big", "bank-b")
    try:
        both = wait_for(lambda: e if len(e := _entries(server, call_id="toolu_pay")) == 2 else None, "both")
        by_service = {e["service"]: e for e in both}
        small_entry, big_entry = by_service["bank-a"], by_service["bank-b"]
        # Each entry shows its own call: its own arguments and ids, never one call's with another's.
        assert small_entry["arguments"] == {"amount": 1, "to": "acct-1"}
        assert big_entry["arguments"] == {"amount": 100000, "to": "mallory"}
        assert small_entry["execution_id"] != big_entry["execution_id"]
        assert small_entry["arguments_sha256"] != big_entry["arguments_sha256"]
        # A person allows what the inbox shows for bank-a: only that call runs.
        status, body = _decide(server, small_entry, "allow", by="alice")
        assert status == 200, body
        _finish(small)
        # The other call of the same id still waits: the allow was not given to it.
        assert _entries(server, execution_id=big_entry["execution_id"])
        status, _, raw = server.request(
            "GET",
            f"/api/control/decisions/{big_entry['execution_id']}?trace_id={big_entry['trace_id']}&wait=1"
            f"&call_id=toolu_pay&tool=transfer&shown={big_entry['arguments_sha256']}",
        )
        assert (status, json.loads(raw)["decision"], json.loads(raw)["resumes"]) == (200, None, None)
        assert _bodies(tmp_path, "big") == []
        # Deciding the second call is answered with its own decision, never the first's.
        status, body = _decide(server, big_entry, "deny", by="bob", note="not mallory")
        assert status == 200, body
        assert (body["execution_id"], body["decision"], body["by"]) == (
            big_entry["execution_id"],
            "deny",
            "bob",
        )
        _finish(big)
    finally:
        small.kill()
        big.kill()
    assert [b["arguments"] for b in _bodies(tmp_path, "small")] == [{"amount": 1, "to": "acct-1"}]
    assert _bodies(tmp_path, "big") == []
    ((result,),) = _results(tmp_path, "big")
    assert result["content"] == "PermissionDenied: not mallory"
    (span,) = _tool_spans(tmp_path, "big")
    assert _decided(span)[semconv.PERMISSION_DECIDED_BY] == "bob"


@pytest.mark.processes
def test_a_new_waiting_call_is_listed_however_many_never_ended_and_the_stale_ones_age_out(
    tmp_path: Path,
) -> None:
    with running_server(tmp_path, "--token", TOKEN, *DECIDER_ARGS, "--stale-after", "2") as server:
        server.headers = dict(AUTH)
        # 1,001 calls that asked for their approval and never ended (crashed runs, or forged ones).
        forged = [
            waiting_span(f"{n:032x}", f"{n + 1:016x}", call_id=f"toolu_crashed_{n}", start_ns=10**9 + n)
            for n in range(1, 1002)
        ]
        ingest(server, forged)
        listed: list[dict[str, Any]] = []
        after = ""
        while True:
            page = server.get_json(f"/api/control/waiting?limit=1000{after}")
            listed += page["waiting"]
            if "next" not in page:
                break
            after = f"&after={page['next']}"
        assert len(listed) == 1001  # every one found, paged
        # Their applications never asked for a decision: they age out.
        wait_for(lambda: server.get_json("/api/control/waiting")["waiting"] == [], "the stale calls gone", 20)
        app = _app(server, tmp_path, "gate", "run")
        try:
            entry = wait_for(lambda: _waiting(server, "toolu_del"), "the new call in the inbox")
            # Its application asks for the decision: it stays, however long the person takes.
            time.sleep(3)
            assert [e["execution_id"] for e in server.get_json("/api/control/waiting")["waiting"]] == [
                entry["execution_id"]
            ]
            assert _decide(server, entry, "allow")[0] == 200
            _finish(app)
        finally:
            app.kill()
        assert [b["tool"] for b in _bodies(tmp_path, "run")] == ["delete_files"]


def _raw_decision(server: Server, body: bytes) -> tuple[int, dict[str, str], Any]:
    status, headers, raw = server.request(
        "POST", "/api/control/decisions", body, {"Content-Type": "application/json", **as_decider("alice")}
    )
    return status, {k.lower(): v for k, v in headers.items()}, json.loads(raw)


@pytest.mark.processes
def test_hostile_values_in_a_decision_are_a_400_naming_the_field_and_nothing_is_stored(
    server: Server, tmp_path: Path
) -> None:
    app = _app(server, tmp_path, "gate", "run")
    try:
        entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
        head = json.dumps({k: entry[k] for k in ("execution_id", "trace_id")})[:-1]
        head += f', "decision": "allow", "shown": "{entry["arguments_sha256"]}", '
        cases = [
            ('"arguments": {"path": NaN}}', "'arguments.path' holds NaN"),
            ('"arguments": {"path": Infinity}}', "'arguments.path' holds Infinity"),
            ('"arguments": {"path": [1, -Infinity]}}', "'arguments.path[1]' holds -Infinity"),
            ('"arguments": {"path": 1e999}}', "'arguments.path' holds 1e999"),
            ('"arguments": {"path": "\\ud800"}}', "'arguments.path' holds a lone surrogate"),
            ('"arguments": {"\\udc00": "x"}}', "a key of field 'arguments' holds a lone surrogate"),
            ('"note": "\\udbff"}', "'note' holds a lone surrogate"),
            ('"arguments": {"path": ' + "[" * 100 + "]" * 100 + "}}", "nested deeper than 64"),
            ('"arguments": {"path": ' + "[" * 100_000 + "]" * 100_000 + "}}", "nested deeper than 64"),
        ]
        for tail, text in cases:
            status, headers, answer = _raw_decision(server, (head + tail).encode())
            assert status == 400, (tail[:60], status, answer)
            assert text in answer["error"], (tail[:60], answer)
            # An error of the server's own, with the security headers of every response.
            assert headers["x-content-type-options"] == "nosniff"
            assert headers["content-security-policy"].startswith("default-src 'none'")
        # Nothing was stored: the call still waits, undecided, and the inbox reads.
        assert _waiting(server, "toolu_del")["decision"] is None
        status, body = _decide(server, entry, "deny", by="bob", note="no")
        assert status == 200, body
        _finish(app)
    finally:
        app.kill()
    assert _bodies(tmp_path, "run") == []


@pytest.mark.processes
def test_an_ingested_waiting_call_whose_arguments_are_no_json_leaves_the_inbox_readable(
    server: Server,
) -> None:
    texts = {
        "nan": '{"amount": NaN}',
        "inf": '{"amount": 1e999, "to": -Infinity}',
        "deep": '{"a": ' + "[" * 5000 + "]" * 5000 + "}",
        "surrogate": '{"to": "\\ud800"}',
    }
    for n, (name, text) in enumerate(texts.items(), 1):
        ingest(server, [waiting_span(f"{n:032x}", f"{n:016x}", call_id=f"toolu_{name}", arguments=text)])
    entries = {e["call_id"]: e for e in server.get_json("/api/control/waiting")["waiting"]}
    assert set(entries) == {f"toolu_{name}" for name in texts}
    shown = {
        # Non-finite numbers as the strings OTLP/JSON writes them as; what no JSON value can hold (nesting
        # past 256 levels, a lone surrogate) as the text it is.
        "nan": {"amount": "NaN"},
        "inf": {"amount": "Infinity", "to": "-Infinity"},
        "deep": texts["deep"],
        "surrogate": texts["surrogate"],
    }
    for name, text in texts.items():
        entry = entries[f"toolu_{name}"]
        assert entry["arguments"] == shown[name]
        assert entry["arguments_sha256"] == hashlib.sha256(text.encode()).hexdigest()
        # Deciding it, and reading that decision and the trace's pages, answer (never a 500).
        status, body = _decide(server, entry, "deny", note="not JSON")
        assert status == 200, body
        for path in (
            f"/api/control/decisions/{entry['execution_id']}?trace_id={entry['trace_id']}",
            f"/api/traces/{entry['trace_id']}/page",
            f"/traces/{entry['trace_id']}",
            f"/api/traces/{entry['trace_id']}/events",
        ):
            status, _, raw = server.request("GET", path)
            assert status == 200, (name, path, raw[:200])
    assert server.get_json("/api/control/waiting")["waiting"][0]["decision"]["decision"] == "deny"


@pytest.mark.processes
def test_a_call_id_with_slashes_and_3000_characters_is_decided(server: Server, tmp_path: Path) -> None:
    app = _app(server, tmp_path, "long-id", "run")
    try:
        entry = wait_for(
            lambda: next((e for e in _entries(server) if e["call_id"].startswith("toolu/")), None), "the call"
        )
        assert len(entry["call_id"]) == 3000
        assert _decide(server, entry, "allow")[0] == 200
        _finish(app)
    finally:
        app.kill()
    assert [b["arguments"] for b in _bodies(tmp_path, "run")] == [{"path": "/srv/long"}]


@pytest.mark.processes
def test_a_forged_span_cannot_make_a_real_call_wait_for_57_years(server: Server, tmp_path: Path) -> None:
    """A span forged in 1970 with the real call's id, tool and arguments: shown waiting since it reached the
    server (give or take a minute), never since 1970; a person decides it; the real call re-issued takes the
    decision (the same call, tool and arguments) with a latency of minutes at most, not 57 years."""
    arguments = json.dumps({"path": "/srv/old"})
    ingest(
        server,
        [waiting_span("e" * 32, "e" * 16, call_id="toolu_del", tool="delete_files", arguments=arguments)],
        "control-app",
    )
    (forged,) = _entries(server, call_id="toolu_del")
    now_ms = time.time() * 1000
    assert now_ms - 61_000 <= forged["waiting_since"] <= now_ms + 1000
    assert _decide(server, forged, "allow", by="dan")[0] == 200
    app = _app(server, tmp_path, "gate", "run")
    _finish(app)
    (span,) = _tool_spans(tmp_path, "run")
    decided = _decided(span)
    assert decided[semconv.PERMISSION_DECIDED_BY] == "dan"
    assert decided[semconv.PERMISSION_LATENCY_MS] < 10 * 60 * 1000
    assert span.attributes[semconv.TOOLSPAN_APPROVAL_RESUMES] == "exec_" + "e" * 16


@pytest.mark.processes
def test_deciding_a_call_that_ended_is_a_409_with_its_state(server: Server) -> None:
    ended = waiting_span("d" * 32, "d" * 16, start_ns=10**18, end_ns=10**18 + 10)
    ingest(server, [ended])
    shown = hashlib.sha256(b'{"amount": 1}').hexdigest()
    doc = {"execution_id": "exec_" + "d" * 16, "decision": "allow", "shown": shown}
    status, body = _post(server, "/api/control/decisions", doc)
    assert status == 409, body
    assert body["state"] == "SEALED" or body["state"] == "COMPLETED"
    assert "does not wait" in body["error"]
    status, body = _post(server, "/api/control/decisions", {**doc, "execution_id": "exec_" + "c" * 16})
    assert status == 404


@pytest.mark.processes
def test_a_host_whose_port_is_not_a_number_is_refused(server: Server) -> None:
    for host in ("127.0.0.1:abc", "localhost:80x", "127.0.0.1:99999", "[::1]:8a", "127.0.0.1:\u0663"):
        with socket.create_connection((HOST, server.port), timeout=10) as sock:
            request = f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            sock.sendall(request.encode("utf-8"))
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 403"), (host, answer[:200])
        assert b"port that is not a number" in answer
    status, _, _ = server.request("GET", "/healthz", headers={"Host": f"127.0.0.1:{server.port}"})
    assert status == 200


def test_an_edit_is_checked_against_a_recorded_schema_read_as_untrusted() -> None:
    """Edits that do not fit are refused end to end by tests/server/test_control_live.py (a number for a str,
    a missing and an unknown parameter: 422); here the checker on schemas a forger recorded: references out of
    the schema, patterns only on RE2, schemas that are no JSON or no JSON Schema."""
    from toolspan.server._http.routes.control.edits import edit_problem

    good = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert edit_problem(good, {"n": 1}) is None
    assert "'arguments.n'" in str(edit_problem(good, {"n": "1"}))
    assert "no parameter schema" in str(edit_problem(None, {"n": 1}))
    assert "not JSON" in str(edit_problem('{"type": NaN}', {"n": 1}))
    assert "refers outside itself" in str(edit_problem(json.dumps({"$ref": "https://evil.example/s"}), {}))
    assert "not a valid JSON Schema" in str(edit_problem(json.dumps({"type": 7}), {}))
    redos = json.dumps({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}})
    try:
        import re2  # noqa: F401
    except ImportError:
        assert "RE2" in str(edit_problem(redos, {"s": "a" * 40 + "!"}))
    else:  # linear time: answers at once
        assert "'arguments.s'" in str(edit_problem(redos, {"s": "a" * 40 + "!"}))
