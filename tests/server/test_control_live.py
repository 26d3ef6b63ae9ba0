"""The control channel end to end with real processes: an application (``control_live_app.py``) whose
tool calls ``toolspan.ServerApprover`` gates, exporting OTLP with pending records to a real ``toolspan serve
--token ... --decider NAME=TOKEN``; decisions and cancel requests made over HTTP with decider tokens, each
naming the exact call and the digest of the arguments shown (the decision then on the progress stream, the
agent PAUSED while the call waited): allow, deny, edit (and invalid edits refused: 400, 409, 422), two
deciders racing, the application SIGKILLed while it waits and started again, the server restarted while the
application waits, cancel of an async tool, of a sync tool that checks, of a generator, and of a call that
already ended; a denied or cancelled call never runs its body. On SQLite, and on PostgreSQL with ``--store
postgres``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import APPS, REPO
from tests.support.server import Server, running_server, sdk_env, sse_stream, wait_for
from toolspan import semconv
from toolspan._util.words import choices
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans

pytestmark = pytest.mark.processes

APP = APPS / "control_live_app.py"
TOKEN = "control-test-token"  # the application's: it sends spans and reads, never decides
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# Decider tokens, by name (what a decision records as ``by``).
DECIDERS = {name: f"{name}-decider-token" for name in ("alice", "bob", "carol", "dan", "erin", "ops", "pat")}
DECIDER_ARGS = tuple(f"--decider={name}={token}" for name, token in DECIDERS.items())


def as_decider(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {DECIDERS[name]}"}


def _app(server: Server, workdir: Path, mode: str, name: str, *extra: str) -> subprocess.Popen[bytes]:
    env = {
        **sdk_env(server, "http/protobuf"),
        "TOOLSPAN_PENDING_SPANS": "true",
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{TOKEN}",
    }
    return subprocess.Popen(
        [sys.executable, str(APP), str(workdir), mode, name, server.url, TOKEN, *extra], env=env
    )


def _post(
    server: Server, path: str, doc: Any, headers: dict[str, str] | None = None, by: str = "alice"
) -> tuple[int, Any]:
    status, _, body = server.request(
        "POST",
        path,
        json.dumps(doc).encode(),
        {"Content-Type": "application/json", **as_decider(by), **(headers or {})},
    )
    return status, json.loads(body)


def _decide(
    server: Server, entry: dict[str, Any], decision: str, by: str = "alice", **extra: Any
) -> tuple[int, Any]:
    """Decide the call of inbox ``entry``: its exact execution, and the digest of the arguments it shows."""
    doc = {
        "execution_id": entry["execution_id"],
        "trace_id": entry["trace_id"],
        "decision": decision,
        "shown": entry["arguments_sha256"],
        **extra,
    }
    return _post(server, "/api/control/decisions", doc, by=by)


def _waiting(server: Server, call_id: str) -> dict[str, Any] | None:
    for entry in server.get_json("/api/control/waiting")["waiting"]:
        if entry["call_id"] == call_id:
            return dict(entry)
    return None


def _bodies(workdir: Path, name: str) -> list[dict[str, Any]]:
    path = workdir / f"{name}-bodies.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _results(workdir: Path, name: str) -> Any:
    return json.loads((workdir / f"{name}-results.json").read_text())


def _tool_spans(workdir: Path, name: str) -> list[Span]:
    spans, _ = read_spans(workdir / f"{name}.jsonl")
    return [s for s in spans if s.name.startswith("execute_tool ")]


def _decided(span: Span) -> dict[str, Any]:
    events = [e for e in span.events if e.name == semconv.PERMISSION_DECIDED_EVENT]
    assert len(events) == 1, span.events
    return dict(events[0].attributes)


def _finish(app: subprocess.Popen[bytes]) -> None:
    try:
        assert app.wait(60) == 0
    finally:
        if app.poll() is None:
            app.kill()


@pytest.fixture
def server(tmp_path: Path) -> Any:
    with running_server(tmp_path, "--token", TOKEN, *DECIDER_ARGS) as srv:
        srv.headers = dict(AUTH)
        yield srv


def test_a_call_waits_in_the_inbox_and_runs_once_allowed_over_http(server: Server, tmp_path: Path) -> None:
    app = _app(server, tmp_path, "gate", "run")
    try:
        entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
        assert entry["tool"] == "delete_files"
        assert entry["arguments"] == {"path": "/srv/old"}
        assert entry["service"] == "control-app"
        # The agent's span ends later: the inbox names the agent its approval request carries.
        assert entry["agent"] == "control-agent"
        assert entry["trace_id"] == entry["trace_id"].lower()
        assert len(entry["trace_id"]) == 32
        assert entry["decision"] is None
        assert entry["execution_id"] == f"exec_{entry['span_id']}"
        assert entry["arguments_sha256"] == hashlib.sha256(b'{"path": "/srv/old"}').hexdigest()
        assert entry["arguments_recorded"] is True
        assert _bodies(tmp_path, "run") == []  # nothing ran before the decision
        status, body = _decide(server, entry, "allow", note="ok")
        assert status == 200, body
        # Who decided is the decider token's name.
        assert (body["decision"], body["by"], body["note"]) == ("allow", "alice", "ok")
        assert (body["execution_id"], body["shown"]) == (entry["execution_id"], entry["arguments_sha256"])
        # The same decision again is harmless: the same body.
        assert _decide(server, entry, "allow", note="ok") == (200, body)
        _finish(app)
    finally:
        app.kill()
    assert [b["tool"] for b in _bodies(tmp_path, "run")] == ["delete_files"]
    (span,) = _tool_spans(tmp_path, "run")
    decided = _decided(span)
    (required,) = [e for e in span.events if e.name == semconv.PERMISSION_REQUIRED_EVENT]
    assert required.attributes[semconv.GEN_AI_AGENT_NAME] == "control-agent"
    assert decided[semconv.PERMISSION_DECIDED_BY] == "alice"
    assert decided[semconv.PERMISSION_DECISION] == "allow"
    assert isinstance(decided[semconv.PERMISSION_LATENCY_MS], int)
    assert span.attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_COMPLETED
    # The server's progress view shows the decision with who made it and the wait.
    progress = [json.loads(line) for line in server.get(f"/api/traces/{span.trace_id}/progress").splitlines()]
    (event,) = [p["event"] for p in progress if p["event"]["type"] == "permission_decided"]
    assert (event["by"], event["decision"], event["callId"]) == ("alice", "allow", "toolu_del")
    assert event["latencyMs"] == decided[semconv.PERMISSION_LATENCY_MS]
    # The same on the live progress stream, with the agent paused while the call waited.
    stream = sse_stream(server, f"/api/traces/{span.trace_id}/progress/stream")
    seen = []
    for message in stream:
        seen.append(message.json()["event"])
        if seen[-1]["type"] == "done":
            break
    stream.close()
    assert [e for e in seen if e["type"] == "permission_decided"] == [event]
    assert [(e["from"], e["to"]) for e in seen if e["type"] == "state_changed"] == [
        ("READY", "WORKING"),
        ("WORKING", "PAUSED"),
        ("PAUSED", "WORKING"),
        ("WORKING", "READY"),
    ]
    assert wait_for(lambda: _waiting(server, "toolu_del") is None, "the inbox emptied")


def test_a_denied_call_never_runs_its_body(server: Server, tmp_path: Path) -> None:
    app = _app(server, tmp_path, "gate", "run")
    try:
        entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
        status, body = _decide(server, entry, "deny", by="bob", note="no")
        assert status == 200, body
        _finish(app)
    finally:
        app.kill()
    assert _bodies(tmp_path, "run") == []
    (span,) = _tool_spans(tmp_path, "run")
    assert span.attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED
    assert _decided(span)[semconv.PERMISSION_DECIDED_BY] == "bob"
    ((result,),) = _results(tmp_path, "run")
    assert result["is_error"] is True
    assert "no" in result["content"]


def test_an_edit_runs_the_edited_arguments_and_an_invalid_edit_is_refused(
    server: Server, tmp_path: Path
) -> None:
    app = _app(server, tmp_path, "gate", "run")
    try:
        entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
        target = {"execution_id": entry["execution_id"], "trace_id": entry["trace_id"]}
        shown = entry["arguments_sha256"]
        bad = [
            ({"decision": "allow", "shown": shown, "arguments": ["/tmp"]}, 400, "JSON object"),
            (
                {"decision": "deny", "shown": shown, "arguments": {"path": "/tmp"}},
                400,
                "'allow' decision only",
            ),
            ({"decision": "maybe", "shown": shown}, 400, f"'decision' must be {choices()}, got 'maybe'"),
            ({"decision": "allow"}, 400, "'shown' is required"),
            # Who decides is the token's name: a body cannot say it.
            ({"decision": "allow", "shown": shown, "by": "mallory"}, 400, "'by' is not taken"),
            ({"decision": "allow", "shown": shown, "call_id": "toolu_del"}, 400, "'call_id' is not taken"),
            # The arguments shown are not those the call recorded: a stale or forged view.
            ({"decision": "allow", "shown": "0" * 64}, 409, "other arguments than those shown"),
            # Edits that do not fit the tool's recorded parameters (delete_files(path: str)).
            ({"decision": "allow", "shown": shown, "arguments": {"path": 5}}, 422, "'arguments.path'"),
            ({"decision": "allow", "shown": shown, "arguments": {}}, 422, "'path' is a required property"),
            (
                {"decision": "allow", "shown": shown, "arguments": {"path": "/x", "force": True}},
                422,
                "'force' was unexpected",
            ),
        ]
        for doc, status, text in bad:
            got, body = _post(server, "/api/control/decisions", {**target, **doc}, by="carol")
            assert got == status, (doc, got, body)
            assert text in body["error"], (doc, body)
        assert (
            _post(server, "/api/control/decisions", {**target, "decision": "allow", "shown": "0" * 64})[1][
                "arguments_sha256"
            ]
            == shown
        )
        assert _waiting(server, "toolu_del")["decision"] is None  # nothing stored by a refused request
        status, body = _decide(server, entry, "allow", by="carol", arguments={"path": "/tmp/x"})
        assert status == 200, body
        assert body["arguments"] == {"path": "/tmp/x"}
        _finish(app)
    finally:
        app.kill()
    (ran,) = _bodies(tmp_path, "run")
    assert ran["arguments"] == {"path": "/tmp/x"}
    (span,) = _tool_spans(tmp_path, "run")
    assert json.loads(span.attributes[semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS]) == {"path": "/tmp/x"}
    # The schema the edit was checked against is on the span (recorded with the approval request).
    assert json.loads(span.attributes[semconv.TOOLSPAN_TOOL_PARAMETERS]) == {
        "additionalProperties": False,
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "type": "object",
    }


def test_two_deciders_racing_exactly_one_wins(server: Server, tmp_path: Path) -> None:
    app = _app(server, tmp_path, "gate", "run")
    try:
        entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
        answers: list[tuple[int, Any]] = []
        start = threading.Barrier(8)
        names = sorted(DECIDERS)

        def decide(n: int) -> None:
            start.wait()
            answers.append(_decide(server, entry, "allow" if n % 2 else "deny", by=names[n % len(names)]))

        threads = [threading.Thread(target=decide, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _finish(app)
    finally:
        app.kill()
    ok = [body for status, body in answers if status == 200]
    refused = [body for status, body in answers if status == 409]
    assert len(ok) + len(refused) == 8
    assert refused
    winner = ok[0]
    # Every 200 agrees with the winner (the same decision repeated); every 409 names it.
    assert all(b["decision"] == winner["decision"] for b in ok)
    assert all(b["decision"] == winner for b in refused), refused
    assert all("already decided" in b["error"] for b in refused)
    (span,) = _tool_spans(tmp_path, "run")
    assert _decided(span)[semconv.PERMISSION_DECISION] == winner["decision"]
    assert _decided(span)[semconv.PERMISSION_DECIDED_BY] == winner["by"]
    assert len(_bodies(tmp_path, "run")) == (1 if winner["decision"] == "allow" else 0)


def test_writes_need_a_decider_token_json_and_the_servers_own_origin(server: Server, tmp_path: Path) -> None:
    doc = {"execution_id": "exec_00000000000000ab", "decision": "allow", "shown": "0" * 64}

    def post(
        headers: dict[str, str], body: Any = doc, path: str = "/api/control/decisions"
    ) -> tuple[int, Any]:
        status, _, raw = server.request(
            "POST", path, json.dumps(body).encode(), {"Content-Type": "application/json", **headers}
        )
        return status, json.loads(raw)

    for path, body in (
        ("/api/control/decisions", doc),
        ("/api/control/cancels", {"execution_id": "exec_00000000000000ab"}),
    ):
        # The application's token reads and sends spans: it never decides or cancels.
        status, answer = post(AUTH, body, path)
        assert status == 403, answer
        assert "never decide or cancel" in answer["error"]
        assert "--decider" in answer["error"]
        status, answer = post({"Authorization": "Bearer wrong"}, body, path)
        assert status == 401
        status, answer = post({"Authorization": ""}, body, path)
        assert status == 401
    status, _, raw = server.request(
        "POST",
        "/api/control/decisions",
        json.dumps(doc).encode(),
        {"Content-Type": "text/plain", **as_decider("alice")},
    )
    assert status == 415
    assert b"application/json" in raw
    status, body = _post(server, "/api/control/decisions", doc, {"Origin": "https://evil.example"})
    assert status == 403
    assert "origin" in body["error"]
    status, body = _post(server, "/api/control/decisions", doc, {"Origin": server.url})
    assert status == 404
    assert "exec_00000000000000ab" in body["error"]
    # A query token is not taken for a write, a decider's included.
    status, _, raw = server.request(
        "POST",
        f"/api/control/decisions?access_token={DECIDERS['alice']}",
        json.dumps(doc).encode(),
        {"Content-Type": "application/json", "Authorization": ""},
    )
    assert status == 401
    status, _, raw = server.request("GET", "/api/control/decisions", headers=AUTH)
    assert status == 405  # nothing changes state on a GET
    # A decider token reads everything, and never sends spans.
    status, _, _ = server.request("GET", "/api/control/waiting", headers=as_decider("bob"))
    assert status == 200
    status, _, raw = server.request(
        "POST", "/v1/traces", b"{}", {"Content-Type": "application/json", **as_decider("bob")}
    )
    assert status == 403
    assert b"decider token may not send spans" in raw


def test_whoami_says_what_each_token_may_do(server: Server, tmp_path: Path) -> None:
    def whoami(headers: dict[str, str]) -> tuple[int, Any]:
        status, _, raw = server.request("GET", "/api/whoami", headers=headers)
        return status, json.loads(raw)

    assert whoami(AUTH) == (200, {"name": None, "can": ["ingest", "read"]})
    assert whoami(as_decider("erin")) == (200, {"name": "erin", "can": ["read", "decide"]})
    # No token, on a server with an application token: nothing.
    assert whoami({"Authorization": ""}) == (200, {"name": None, "can": []})
    status, _ = whoami({"Authorization": "Bearer not-a-token"})
    assert status == 401
    (tmp_path / "open").mkdir()
    with running_server(tmp_path / "open", f"--decider=alice={DECIDERS['alice']}") as open_server:
        status, _, raw = open_server.request("GET", "/api/whoami")
        # Without an application token, anyone may send spans and read; deciding still needs a decider.
        assert (status, json.loads(raw)) == (200, {"name": None, "can": ["ingest", "read"]})


def test_without_a_decider_deciding_is_refused_and_reads_stay_open(tmp_path: Path) -> None:
    for args in ((), ("--token", TOKEN)):
        (tmp_path / str(len(args))).mkdir()
        with running_server(tmp_path / str(len(args)), *args) as srv:
            for path, doc in (
                ("/api/control/decisions", {"execution_id": "exec_00000000000000aa", "decision": "allow"}),
                ("/api/control/cancels", {"execution_id": "exec_00000000000000aa"}),
            ):
                status, _, raw = srv.request(
                    "POST", path, json.dumps(doc).encode(), {"Content-Type": "application/json", **AUTH}
                )
                assert status == 403, raw
                assert b"--decider NAME=TOKEN" in raw
            srv.headers = dict(AUTH) if args else {}
            assert srv.get_json("/api/control/waiting") == {"waiting": []}


def test_the_server_refuses_tokens_it_cannot_tell_apart(tmp_path: Path) -> None:
    import os

    cases = [
        (["--token", "same", "--decider", "alice=same"], "has the application's token"),
        (["--decider", "alice=one", "--decider", "bob=one"], "shares its token"),
        (["--decider", "alice=one", "--decider", "alice=two"], "two deciders are named 'alice'"),
        (["--decider", "no name=x"], "is not 1-64 letters"),
        (["--decider", "alice"], "expected NAME=TOKEN"),
        (["--decider", "alice=tab\there"], "visible ASCII"),
    ]
    for args, text in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "toolspan", "serve", "--port", "0", "--grpc-port", "-1",
             "--db", str(tmp_path / "x.db"), *args],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 2, (args, proc.stderr)
        assert text in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    env = {**os.environ, "TOOLSPAN_DECIDERS": "alice=x,broken", "TOOLSPAN_SERVER_TOKEN": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "toolspan", "serve", "--port", "0", "--grpc-port", "-1",
         "--db", str(tmp_path / "x.db")],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "TOOLSPAN_DECIDERS: entry 2" in proc.stderr


def test_an_application_killed_while_it_waits_finds_the_decision_when_started_again(
    server: Server, tmp_path: Path
) -> None:
    first = _app(server, tmp_path, "gate", "first")
    try:
        waited = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
    finally:
        first.kill()  # SIGKILL: no span ends, nothing flushes
        first.wait(10)
    # The call still waits in the inbox (its pending record is all the server has of it); decided now.
    assert _waiting(server, "toolu_del")["execution_id"] == waited["execution_id"]
    status, body = _decide(server, waited, "allow", by="dan")
    assert status == 200, body
    second = _app(server, tmp_path, "gate", "second")
    _finish(second)
    assert _bodies(tmp_path, "first") == []
    assert [b["tool"] for b in _bodies(tmp_path, "second")] == ["delete_files"]
    (span,) = _tool_spans(tmp_path, "second")
    assert span.attributes[semconv.TOOLSPAN_APPROVAL_RESUMES] == waited["execution_id"]
    (link,) = span.links
    assert (link.trace_id, link.span_id) == (waited["trace_id"], waited["span_id"])
    assert link.attributes[semconv.TOOLSPAN_LINK_TYPE] == semconv.LINK_TYPE_RESUMES_APPROVAL
    decided = _decided(span)
    assert decided[semconv.PERMISSION_DECIDED_BY] == "dan"
    # The wait counts from the first permission_required, in the killed process.
    assert decided[semconv.PERMISSION_LATENCY_MS] >= (span.start_ns // 1_000_000) - waited["waiting_since"]


def test_a_decision_is_not_given_to_the_same_call_id_with_other_arguments(
    server: Server, tmp_path: Path
) -> None:
    first = _app(server, tmp_path, "gate", "first")
    try:
        waited = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
    finally:
        first.kill()
        first.wait(10)
    status, body = _decide(server, waited, "allow", by="dan")
    assert status == 200, body
    # Started again, the model asks for the same call id with other arguments: the allow for "/srv/old" is
    # not an allow for "/". The new call is an inbox entry of its own, and waits for its own decision.
    second = _app(server, tmp_path, "gate-other", "second")
    try:

        def other() -> Any:
            entries = server.get_json("/api/control/waiting")["waiting"]
            return next((e for e in entries if e["arguments"] == {"path": "/"}), None)

        entry = wait_for(other, "the re-issued call in the inbox")
        assert entry["call_id"] == "toolu_del"
        assert entry["execution_id"] != waited["execution_id"]
        assert entry["decision"] is None
        # It waits through a round of its approver's long poll with the first call's allow standing.
        status, _, _ = server.request(
            "GET", f"/api/control/decisions/{entry['execution_id']}?trace_id={entry['trace_id']}&wait=1"
        )
        assert status == 200
        assert _bodies(tmp_path, "second") == []
        assert (
            _post(
                server,
                "/api/control/decisions",
                {
                    **{k: entry[k] for k in ("execution_id", "trace_id")},
                    "decision": "deny",
                    "shown": entry["arguments_sha256"],
                },
                by="erin",
            )[0]
            == 200
        )
        _finish(second)
    finally:
        second.kill()
    assert _bodies(tmp_path, "first") == []
    assert _bodies(tmp_path, "second") == []
    (span,) = _tool_spans(tmp_path, "second")
    assert span.attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED
    assert _decided(span)[semconv.PERMISSION_DECIDED_BY] == "erin"
    assert not span.links  # it took nothing of the first call


def test_the_server_restarted_while_the_application_waits(server: Server, tmp_path: Path) -> None:
    app = _app(server, tmp_path, "gate", "run")
    try:
        wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
        server.stop()
        assert app.poll() is None  # the approver reconnects: the call still waits
        server.start()
        entry = _waiting(server, "toolu_del")
        assert entry is not None  # the store kept it
        status, body = _decide(server, entry, "allow", by="erin")
        assert status == 200, body
        _finish(app)
    finally:
        app.kill()
    assert [b["tool"] for b in _bodies(tmp_path, "run")] == ["delete_files"]
    (span,) = _tool_spans(tmp_path, "run")
    assert _decided(span)[semconv.PERMISSION_DECIDED_BY] == "erin"
    assert not span.links  # the same process and span: nothing to link back to


def _cancel(
    server: Server, mode: str, tmp_path: Path, call_id: str, tool: str
) -> tuple[dict[str, Any], Span]:
    """Allow the call, wait for its body to start, cancel it; the cancel answer and the ended span."""
    app = _app(server, tmp_path, mode, "run")
    try:
        entry = wait_for(lambda: _waiting(server, call_id), "the call in the inbox")
        assert _decide(server, entry, "allow", by="ops")[0] == 200
        (ran,) = wait_for(lambda: _bodies(tmp_path, "run"), "the body started")
        assert ran["tool"] == tool
        # The server knows the call runs once the allowing decision's record arrives.
        status, body = wait_for(
            lambda: (
                r
                if (
                    r := _post(
                        server,
                        "/api/control/cancels",
                        {"execution_id": ran["execution_id"], "note": "stop"},
                        by="ops",
                    )
                )[0]
                != 409
                else None
            ),
            "the cancel request taken",
        )
        assert status == 202, body
        assert (body["by"], body["note"], body["call_id"]) == ("ops", "stop", call_id)
        _finish(app)
    finally:
        app.kill()
    # Asked again: the same request, harmless.
    assert _post(
        server, "/api/control/cancels", {"execution_id": ran["execution_id"], "note": "stop"}, by="ops"
    ) == (200, body)
    ((result,),) = _results(tmp_path, "run")
    assert result["is_error"] is True
    assert result["content"].startswith("ToolCancelled: stop")
    (span,) = _tool_spans(tmp_path, "run")
    assert span.attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_CANCELLED
    assert span.attributes[semconv.TOOLSPAN_TOOL_CANCELLED_BY] == "ops"
    assert span.attributes[semconv.ERROR_TYPE] == "toolspan.ToolCancelled"
    assert span.end_ns is not None
    return body, span


def test_cancel_an_async_tool(server: Server, tmp_path: Path) -> None:
    _, span = _cancel(server, "async", tmp_path, "toolu_async", "watch_async")
    # Cancelled, not run to its 60 s end.
    assert span.end_ns - span.start_ns < 30 * 10**9


def test_cancel_a_sync_tool_that_checks(server: Server, tmp_path: Path) -> None:
    _, span = _cancel(server, "sync", tmp_path, "toolu_sync", "watch_sync")
    assert span.end_ns - span.start_ns < 30 * 10**9


def test_cancel_a_generator_tool_at_its_next_yield(server: Server, tmp_path: Path) -> None:
    _, span = _cancel(server, "gen", tmp_path, "toolu_gen", "watch_gen")
    assert 0 < span.attributes[semconv.TOOLSPAN_RESULT_ITEMS] < 1200


def test_cancel_of_a_call_that_already_ended_says_so(server: Server, tmp_path: Path) -> None:
    app = _app(server, tmp_path, "gate", "run")
    try:
        entry = wait_for(lambda: _waiting(server, "toolu_del"), "the call in the inbox")
        assert _decide(server, entry, "allow", by="ops")[0] == 200
        _finish(app)
    finally:
        app.kill()
    (ran,) = _bodies(tmp_path, "run")

    def ended() -> Any:
        status, body = _post(server, "/api/control/cancels", {"execution_id": ran["execution_id"]}, by="ops")
        return (status, body) if status == 409 and body.get("state") == "COMPLETED" else None

    status, body = wait_for(ended, "the call known ended")
    assert "already ended" in body["error"]
    # Deciding a call that ended is a 409 with its state too (never a 404).
    status, body = _decide(server, entry, "allow", by="bob")
    assert status == 200  # the decision that stands, asked for again
    status, body = _decide(server, entry, "deny", by="bob")
    assert status == 409
    assert body["decision"]["decision"] == "allow"
    status, body = _post(server, "/api/control/cancels", {"execution_id": "exec_00000000000000ab"}, by="ops")
    assert status == 404
    status, body = _post(server, "/api/control/cancels", {"execution_id": "not-an-id"}, by="ops")
    assert status == 400
    assert "'execution_id'" in body["error"]


def test_hostile_requests_get_a_precise_4xx_and_change_nothing(server: Server) -> None:
    def raw(body: bytes) -> tuple[int, Any]:
        status, _, answer = server.request(
            "POST",
            "/api/control/decisions",
            body,
            {"Content-Type": "application/json; charset=utf-8", **as_decider("alice")},
        )
        return status, json.loads(answer)

    call = {"execution_id": "exec_00000000000000ab", "decision": "allow", "shown": "0" * 64}
    cases = [
        (b"{not json", 400, "not JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"decision": "allow", "shown": "x"}', 400, "'execution_id' is required"),
        (json.dumps({**call, "shown": ""}).encode(), 400, "non-empty string"),
        (json.dumps({**call, "note": "n" * 5000}).encode(), 400, "longer"),
        (json.dumps({**call, "execution_id": 7}).encode(), 400, "'execution_id'"),
        (json.dumps({**call, "execution_id": "exec_zz"}).encode(), 400, "execution id"),
        (json.dumps({**call, "execution_id": "exec_0000_0000_0000_1"}).encode(), 400, "execution id"),
        (json.dumps({**call, "trace_id": "nope"}).encode(), 400, "'trace_id'"),
        (
            b'{"execution_id": "exec_00000000000000ab", "decision": "allow", "arguments": {"a": "'
            + b"x" * 300_000
            + b'"}}',
            413,
            "limit",
        ),
    ]
    for body, status, text in cases:
        got, answer = raw(body)
        assert got == status, (body[:60], got, answer)
        assert text in answer["error"], (body[:60], answer)
    for query in ("wait=nan", "wait=-1", "wait=1e999", "wait=soon", "wait=" + "9" * 5000):
        status, _, answer = server.request("GET", f"/api/control/decisions/exec_00000000000000ab?{query}")
        assert status == 400, (query, answer)
    status, _, answer = server.request("GET", "/api/control/decisions/c")
    assert status == 400
    assert b"not an execution id" in answer
    assert server.get_json("/api/control/decisions/exec_00000000000000ab")["decision"] is None
    assert server.get_json("/api/control/waiting") == {"waiting": []}


def test_the_openapi_document_lists_the_control_routes(server: Server) -> None:
    paths = server.get_json("/openapi.json")["paths"]
    assert set(paths["/api/control/decisions"]) == {"post"}
    assert set(paths["/api/control/cancels"]) == {"get", "post"}
    assert {"/api/control/waiting", "/api/control/decisions/{execution_id}", "/api/whoami"} <= set(paths)
    post = paths["/api/control/decisions"]["post"]
    assert post["security"] == [{"bearer": []}]
    assert {"200", "400", "401", "403", "404", "409", "415", "422"} <= set(post["responses"])
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["execution_id", "decision", "shown"]
    assert "by" not in schema["properties"]


def test_the_control_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run of ``benchmarks/bench_control.py`` (no timing assertion): its JSON has the figures."""
    out = tmp_path / "control.json"
    script = REPO / "benchmarks" / "bench_control.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--decisions", "3", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["decisions"] == 3
    assert set(doc["decision_to_body_ms"]) == {"median", "p99", "min", "max"}
    assert doc["reference_healthz_round_trip_ms"] > 0
    assert "median" in proc.stdout
