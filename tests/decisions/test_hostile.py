"""The decision chain in the application, tried as an attacker and a careless operator would: what a policy,
an approver and a replay judge is what the body receives, whatever its depth, however many runs there are,
whatever the approver or another thread does to the arguments; a rebooked approval is never handed over; no
token follows a redirect; the offline audit agrees with the live guard; a replay never serves a cut result,
never runs a body in a process it started, and fails as the recording did; the HTML page and the page data
agree."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import http.server
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolspan
from toolspan import semconv
from toolspan._decisions import chain
from toolspan._decisions.guard import PolicyGuard
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import audit
from toolspan.config import Config, set_config
from toolspan.exporters.otlp_file import OtlpJsonFileExporter
from toolspan.exporters.pending import PendingSpanProcessor
from toolspan.policy import parse_policy
from toolspan.testing import capture_spans, installed_tracer_provider

NO_DROP_DOC: dict[str, Any] = {
    "id": "p",
    "version": 1,
    "rules": [
        {
            "id": "no-drop",
            "kind": "arguments",
            "tool": "*",
            "path": "sql",
            "not_pattern": "(?i)drop table",
        },
        {"id": "no-drop-cls", "kind": "arguments", "tool": "*", "path": "cls", "not_pattern": "(?i)drop"},
        {"id": "limit", "kind": "arguments", "tool": "transfer", "path": "payment.amount", "max": 1000},
    ],
}
NO_DROP = parse_policy(NO_DROP_DOC)


@pytest.fixture
def guard() -> Iterator[None]:
    chain.install_guard(PolicyGuard(NO_DROP))
    yield
    chain.install_guard(None)


def _deep(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"next": value}
    return value


@pytest.mark.usefixtures("guard")
def test_a_value_nested_past_the_capture_depth_is_judged_whole() -> None:
    ran: list[Any] = []

    @toolspan.tool
    def run_sql(sql: Any) -> str:
        ran.append(sql)
        return "ok"

    with capture_spans() as finished, pytest.raises(toolspan.ToolDenied, match="no-drop"):
        run_sql(_deep(40, "DROP TABLE users"))
    assert ran == []
    (span,) = finished()
    assert span.attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED
    # 2,000 levels deep: judged too (no recursion), and a harmless value runs.
    with pytest.raises(toolspan.ToolDenied):
        run_sql(_deep(2000, "drop table x"))
    assert run_sql(_deep(2000, "select 1")) == "ok"


@pytest.mark.usefixtures("guard")
def test_the_check_judges_the_values_the_body_binds() -> None:
    """A keyword named like a positional-only parameter, a first parameter named cls outside a class, a dict
    whose items() lies: the check reads what the body will read, or denies."""
    ran: list[Any] = []

    @toolspan.tool
    def positional(sql: str, /, **options: Any) -> str:
        ran.append(sql)
        return sql

    @toolspan.tool
    def classy(cls: str, sql: str) -> str:
        ran.append(cls)
        return cls

    class Lying(dict[str, Any]):
        def items(self) -> Any:
            return [("sql", "SELECT 1")]

    @toolspan.tool
    def mapping(sql: Any) -> str:
        ran.append(sql)
        return "ran"

    with capture_spans():
        with pytest.raises(toolspan.ToolDenied, match="no-drop"):
            positional("DROP TABLE t", sql="SELECT 1")  # the body's sql is "DROP TABLE t"
        assert positional("SELECT 1", sql="DROP TABLE t") == "SELECT 1"  # its sql is "SELECT 1"
        with pytest.raises(toolspan.ToolDenied, match="no-drop-cls"):
            classy("DROP everything", "SELECT 1")
        with pytest.raises(toolspan.ToolDenied, match="cannot be judged"):
            mapping({"inner": Lying(sql="DROP TABLE t")})
    assert ran == ["SELECT 1"]


def test_a_run_forgotten_past_4096_others_fails_closed(fresh_config: None) -> None:
    policy = parse_policy(
        {"id": "b", "version": 1, "rules": [{"id": "one", "kind": "budget", "tool": "pay", "max_calls": 1}]}
    )
    guard = PolicyGuard(policy)
    chain.install_guard(guard)
    ran: list[str] = []

    @toolspan.tool
    def pay(who: str) -> str:
        ran.append(who)
        return who

    @toolspan.tool
    def other() -> None:
        return None

    try:
        with capture_spans():
            tracer = trace.get_tracer("t")
            root = tracer.start_span("run A")  # a run still going, idle while 4,096 others call tools
            with trace.use_span(root):
                assert pay("first") == "first"
            for _ in range(4096):
                with tracer.start_as_current_span("another run"):
                    other()
            with trace.use_span(root), pytest.raises(toolspan.ToolDenied, match="record was dropped"):
                pay("second")  # over its budget: denied, even though the guard forgot the run
            root.end()
    finally:
        chain.install_guard(None)
    assert ran == ["first"]


@pytest.fixture
def own_global_provider() -> Iterator[None]:
    """A global tracer provider ``configure()`` may install for the test, the previous state restored."""
    from opentelemetry.util._once import Once

    saved = (trace._TRACER_PROVIDER_SET_ONCE, trace._TRACER_PROVIDER, trace._PROXY_TRACER_PROVIDER)
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    trace._PROXY_TRACER_PROVIDER = trace.ProxyTracerProvider()
    try:
        yield
    finally:
        installed = trace._TRACER_PROVIDER
        if isinstance(installed, TracerProvider):
            installed.shutdown()
        trace._TRACER_PROVIDER_SET_ONCE, trace._TRACER_PROVIDER, trace._PROXY_TRACER_PROVIDER = saved
        chain.install_guard(None)
        set_config(None)


@pytest.mark.usefixtures("own_global_provider")
def test_a_run_whose_root_ended_is_dropped_not_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLSPAN_POLICY", raising=False)
    policy = parse_policy(
        {"id": "b", "version": 1, "rules": [{"id": "one", "kind": "budget", "tool": "pay", "max_calls": 1}]}
    )
    provider = toolspan.configure(exporters=[], policy=policy, instrument_threading=False)
    guard = chain.GUARD[0]
    assert isinstance(guard, PolicyGuard)

    @toolspan.tool
    def pay() -> str:
        return "paid"

    tracer = provider.get_tracer("t")
    for _ in range(10):
        with tracer.start_as_current_span("run"):
            assert pay() == "paid"  # a new run each time: its own budget
    assert guard._runs == {}  # every run ended: nothing held, nothing remembered as forgotten
    assert guard._forgotten == set()


@pytest.mark.usefixtures("guard")
def test_an_approver_that_mutates_the_arguments_cannot_run_the_body_with_other_values() -> None:
    ran: list[Any] = []

    def transfer(payment: dict[str, Any]) -> str:
        ran.append(json.loads(json.dumps(payment)))
        return "done"

    def mutating(call: toolspan.ToolCall) -> toolspan.Approval:
        call.arguments["payment"]["amount"] = 5000  # after the first check, before the body
        return toolspan.Approval("allow", by="sneaky")

    message = [{"type": "tool_use", "id": "t1", "name": "transfer", "input": {"payment": {"amount": 10}}}]
    with capture_spans():
        (result,) = toolspan.run_tool_calls(message, [transfer], approve=mutating)
    assert result["is_error"] is False
    assert ran == [{"amount": 10}]  # the body got its own copy: the amount the checks judged

    # Another thread changing the caller's message while the approver waits: the same.
    asked = threading.Event()
    release = threading.Event()

    def slow(call: toolspan.ToolCall) -> bool:
        asked.set()
        assert release.wait(30)
        return True

    def meddle() -> None:
        assert asked.wait(30)  # the approver is asked: the message was read before
        message[0]["input"]["payment"]["amount"] = 5000
        release.set()

    ran.clear()
    helper = threading.Thread(target=meddle)
    helper.start()
    with capture_spans():
        (result,) = toolspan.run_tool_calls(message, [transfer], approve=slow)
    helper.join()
    # The body's copy was taken before the approver waited: what another thread does to the message
    # afterwards never reaches it (and what the check after approval judges is that copy).
    assert ran == [{"amount": 10}]

    # An approver's edit changed after it answered (from a thread of its own): the body gets the edit as
    # approved and judged.
    ran.clear()
    message[0]["input"]["payment"]["amount"] = 10
    edit: dict[str, Any] = {"payment": {"amount": 20}}

    def editing(call: toolspan.ToolCall) -> toolspan.Approval:
        return toolspan.Approval("allow", by="a", arguments=edit)

    def meddling_transfer(payment: dict[str, Any]) -> str:
        # The approver answered and the body runs: another thread changes the edit before the body reads
        # its arguments (waited for, never raced against a timer).
        changer = threading.Thread(target=lambda: edit["payment"].__setitem__("amount", 5000))
        changer.start()
        changer.join(30)
        assert edit["payment"]["amount"] == 5000
        return transfer(payment)

    with capture_spans():
        toolspan.run_tool_calls(message, {"transfer": meddling_transfer}, approve=editing)
    assert ran == [{"amount": 20}]


def test_a_rebooked_call_id_never_hands_its_decision_to_the_call_waiting(tmp_path: Path) -> None:
    """transfer(999999) waits in the book; meanwhile its id is forgotten and transfer(10) books it, and a
    person allows what the book now shows (transfer 10): the call still waiting is denied, never run."""
    book = toolspan.ApprovalBook(tmp_path / "book.db", poll_interval=0.02)
    ran: list[int] = []

    def transfer(amount: int) -> str:
        ran.append(amount)
        return "moved"

    def operator() -> None:
        deadline = time.monotonic() + 10
        while not book.waiting() and time.monotonic() < deadline:
            time.sleep(0.02)
        # Another process forgets the id and books it again for another call, in one transaction (as fast as
        # the waiting call's next poll may be: it sees the new booking, never a gap).
        with contextlib.closing(sqlite3.connect(book.path, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM approvals WHERE call_id = 'toolu_1'")
            db.execute(
                "INSERT INTO approvals (call_id, tool, arguments, required_ns) VALUES (?, ?, ?, ?)",
                ("toolu_1", "transfer", '{"amount": 10}', time.time_ns()),
            )
            db.execute("COMMIT")
        book.decide("toolu_1", "allow", by="alice")  # what the book shows now: transfer(10)

    helper = threading.Thread(target=operator)
    helper.start()
    call = [{"type": "tool_use", "id": "toolu_1", "name": "transfer", "input": {"amount": 999999}}]
    with capture_spans():
        (result,) = toolspan.run_tool_calls(call, [transfer], approve=book, approve_timeout=20)
    helper.join()
    assert ran == []
    assert result["is_error"] is True
    assert "with other arguments" in result["content"]


class _Recorder(http.server.BaseHTTPRequestHandler):
    """A server that records the Authorization header of every request it gets."""

    seen: list[str | None]
    location: str

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        if self.location:
            self.send_response(302)
            self.send_header("Location", self.location + self.path)
            self.end_headers()
        else:
            body = json.dumps({"decision": None}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _server(location: str) -> tuple[http.server.ThreadingHTTPServer, list[str | None]]:
    seen: list[str | None] = []
    handler = type("Handler", (_Recorder,), {"seen": seen, "location": location})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server, seen


def test_no_token_follows_a_redirect_to_another_origin() -> None:
    elsewhere, stolen = _server("")
    redirecting, asked = _server(f"http://127.0.0.1:{elsewhere.server_port}")
    try:
        ran: list[str] = []

        def remove(path: str) -> str:
            ran.append(path)
            return "removed"

        approver = toolspan.ServerApprover(f"http://127.0.0.1:{redirecting.server_port}", token="s3cret")
        call = [{"type": "tool_use", "id": "toolu_1", "name": "remove", "input": {"path": "/"}}]
        with capture_spans():
            (result,) = toolspan.run_tool_calls(call, [remove], approve=approver, approve_timeout=5)
        assert ran == []
        assert result["is_error"] is True
        assert "redirect" in result["content"]
        with pytest.raises(toolspan.ReplayError, match="not followed"):
            toolspan.replay(
                f"http://127.0.0.1:{redirecting.server_port}/api/traces/{'a' * 32}", token="s3cret"
            )
        assert asked  # the server named was asked, with the token
        assert all(a == "Bearer s3cret" for a in asked)
        assert stolen == []  # and nothing, least of all the token, went where it pointed
    finally:
        redirecting.shutdown()
        elsewhere.shutdown()


# --- the offline audit agrees with the live guard ---------------------------------------------------------


def _audit(spans: Any, policy: Any) -> dict[str, Any]:
    return audit(from_readable_spans(spans), policy)


def _audit_exit(spans: Any, tmp_path: Path, *flags: str) -> int:
    """The exit status of the real ``toolspan audit`` on ``spans`` written to a file, under ``NO_DROP``."""
    trace, policy = tmp_path / "run.jsonl", tmp_path / "policy.json"
    exporter = OtlpJsonFileExporter(trace)
    exporter.export(list(spans))
    exporter.shutdown()
    policy.write_text(json.dumps(NO_DROP_DOC))
    command = [sys.executable, "-m", "toolspan", "audit", str(trace), "--policy", str(policy), *flags]
    return subprocess.run(command, check=False, capture_output=True, timeout=60).returncode


@pytest.mark.processes  # the real toolspan audit command
def test_a_value_containing_a_marker_in_an_exact_copy_is_judged_as_it_is(
    fresh_config: None, tmp_path: Path
) -> None:
    ran: list[str] = []

    @toolspan.tool
    def run_sql(sql: str) -> str:
        ran.append(sql)
        return "ok"

    with capture_spans() as finished:
        run_sql("DROP TABLE users -- [REDACTED]")  # no policy live: it ran
        run_sql("DROP TABLE t ...[truncated 3 chars]")
    report = _audit(finished(), NO_DROP)
    assert [f["rule_id"] for f in report["violations"]] == ["no-drop", "no-drop"]
    assert report["unchecked"] == []
    assert _audit_exit(finished(), tmp_path) == 1  # the command gates CI on them


@pytest.mark.processes  # the real toolspan audit command
def test_values_the_sdk_cut_without_a_mark_are_unknown_offline_and_never_replayed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # With OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT set, toolspan cuts first, and marks it.
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "100")
    from toolspan.config import get_config, resolve_config

    set_config(resolve_config())
    try:
        assert get_config().max_attribute_bytes == 100
    finally:
        set_config(None)
        monkeypatch.delenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
    # A provider whose own limit (not from the environment) cuts a value unmarked: audit and replay say so.
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_attribute_length=80))
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    @toolspan.tool
    def run_sql(sql: str) -> str:
        return "rows: " + "x" * 200

    with installed_tracer_provider(provider):
        run_sql("SELECT 1 /*" + " " * 100 + "*/; DROP TABLE users")  # arguments cut
        run_sql("SELECT 2")  # a result cut
    spans = exporter.get_finished_spans()
    report = _audit(spans, NO_DROP)
    # Unknown, never judged as the string it was cut to: the command passes, and fails with --strict.
    assert [f["rule_id"] for f in report["unchecked"]] == ["no-drop", "no-drop-cls"]
    assert report["violations"] == []
    assert _audit_exit(spans, tmp_path) == 0
    assert _audit_exit(spans, tmp_path, "--strict") == 1
    with (
        toolspan.replay(from_readable_spans(spans)),
        pytest.raises(toolspan.ReplayError, match="not the JSON"),
    ):
        run_sql("SELECT 2")  # never served the fragment of the result


def test_order_rules_are_judged_in_the_order_the_live_guard_counted_the_calls(fresh_config: None) -> None:
    """read_secrets starts first but is allowed only after send_email ran: live, send_email did not run after
    read_secrets (no violation, nothing denied); the audit of the same spans says the same."""
    policy = parse_policy(
        {
            "id": "o",
            "version": 1,
            "rules": [
                {
                    "id": "no-mail-after-secrets",
                    "kind": "order",
                    "after": "read_secrets",
                    "forbid": "send_email",
                    "unless_approved": False,
                }
            ],
        }
    )
    mail_done = threading.Event()

    def read_secrets(name: str) -> str:
        return "s"

    def send_email(to: str) -> str:
        return "sent"

    asked = threading.Event()

    def approve(call: toolspan.ToolCall) -> bool:
        if call.name == "read_secrets":  # started first (it asks first), allowed last
            asked.set()
            assert mail_done.wait(30)  # send_email ran and its call ended
        else:
            assert asked.wait(30)
        return True

    secrets = [{"type": "tool_use", "id": "a", "name": "read_secrets", "input": {"name": "k"}}]
    mail = [{"type": "tool_use", "id": "b", "name": "send_email", "input": {"to": "x@example.com"}}]
    tools = [read_secrets, send_email]
    results: list[Any] = []
    chain.install_guard(PolicyGuard(policy))
    try:
        with capture_spans() as finished, toolspan.agent("agent"):
            ctx = contextvars.copy_context()
            first = threading.Thread(
                target=lambda: results.extend(
                    ctx.run(toolspan.run_tool_calls, secrets, tools, approve=approve)
                )
            )
            first.start()  # read_secrets starts, asks for its approval and waits
            assert asked.wait(10)
            results.extend(toolspan.run_tool_calls(mail, tools, approve=approve))  # then send_email runs
            mail_done.set()
            first.join(30)
    finally:
        chain.install_guard(None)
    assert [r["is_error"] for r in results] == [False, False]  # live: nothing denied
    spans = finished()
    started = sorted((s.start_time, s.name) for s in spans if s.name.startswith("execute_tool"))
    assert [name for _, name in started] == ["execute_tool read_secrets", "execute_tool send_email"]
    report = _audit(spans, policy)
    assert report["violations"] == []
    assert report["enforced"] == []


def test_calls_that_never_started_their_body_are_not_counted_offline(fresh_config: None) -> None:
    """A call cancelled while it waited for its approval never ran: live, the budget of one still has room
    for the next call; offline, the same."""
    policy = parse_policy(
        {
            "id": "b",
            "version": 1,
            "rules": [{"id": "one-pay", "kind": "budget", "tool": "pay", "max_calls": 1}],
        }
    )

    async def pay(amount: int) -> str:
        return "paid"

    async def never(call: toolspan.ToolCall) -> bool:
        await asyncio.sleep(30)
        return True

    async def main() -> None:
        call = [{"type": "tool_use", "id": "p1", "name": "pay", "input": {"amount": 1}}]
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(toolspan.arun_tool_calls(call, [pay], approve=never), 0.3)
        again = [{"type": "tool_use", "id": "p2", "name": "pay", "input": {"amount": 2}}]
        (result,) = await toolspan.arun_tool_calls(again, [pay], approve=lambda c: True)
        assert result["is_error"] is False  # live: the first never ran, so the budget had room

    chain.install_guard(PolicyGuard(policy))
    try:
        with capture_spans() as finished, toolspan.agent("agent"):
            asyncio.run(main())
    finally:
        chain.install_guard(None)
    spans = finished()
    states = sorted(
        s.attributes.get(semconv.TOOLSPAN_TOOL_STATE) for s in spans if s.name == "execute_tool pay"
    )
    assert states == [semconv.STATE_CANCELLED, semconv.STATE_COMPLETED]
    report = _audit(spans, policy)
    assert report["violations"] == []


def test_a_call_sealed_while_it_waited_for_its_approval_is_not_counted_offline(fresh_config: None) -> None:
    """A process that died while a call waited for its approval leaves only the call's pending record (no
    end: SEALED). Its body never ran: offline it is not counted, so the budget of one still has room for the
    call that ran after it in the same run."""
    policy = parse_policy(
        {
            "id": "b",
            "version": 1,
            "rules": [{"id": "one-pay", "kind": "budget", "tool": "pay", "max_calls": 1}],
        }
    )
    pending_records = InMemorySpanExporter()
    ended = InMemorySpanExporter()
    provider = TracerProvider()
    pending = PendingSpanProcessor(pending_records)
    provider.add_span_processor(pending)
    provider.add_span_processor(SimpleSpanProcessor(ended))
    asked = threading.Event()
    release = threading.Event()

    def pay(amount: int) -> str:
        return "paid"

    def waits(call: toolspan.ToolCall) -> bool:
        asked.set()
        release.wait(10)
        return False

    with installed_tracer_provider(provider), toolspan.agent("agent"):
        first = [{"type": "tool_use", "id": "p1", "name": "pay", "input": {"amount": 1}}]
        in_run = contextvars.copy_context()
        waiting = threading.Thread(
            target=in_run.run, args=(toolspan.run_tool_calls, first, [pay]), kwargs={"approve": waits}
        )
        waiting.start()
        assert asked.wait(10)
        second = [{"type": "tool_use", "id": "p2", "name": "pay", "input": {"amount": 2}}]
        (result,) = toolspan.run_tool_calls(second, [pay])
        assert result["is_error"] is False
        # The process dies here: what it exported of the first call is its pending record, asking.
        pending.force_flush()
        asking = [
            r
            for r in pending_records.get_finished_spans()
            if any(e.name == semconv.PERMISSION_REQUIRED_EVENT for e in r.events)
        ]
        assert len({r.context.span_id for r in asking}) == 1
        record = asking[-1]  # its latest refresh
        release.set()
        waiting.join()
    finished = [s for s in ended.get_finished_spans() if s.context.span_id != record.context.span_id]
    recorded = from_readable_spans([*finished, record])
    (sealed,) = [s for s in recorded if s.end_ns is None]
    assert [e.name for e in sealed.events] == [semconv.PERMISSION_REQUIRED_EVENT]
    report = audit(recorded, policy)
    assert report["violations"] == []
    assert report["enforced"] == []


# --- replay ------------------------------------------------------------------------------------------------


def test_a_result_redacted_when_recorded_is_never_served(fresh_config: None) -> None:
    set_config(Config(redact_keys=frozenset({"api_key"})))
    try:

        @toolspan.tool
        def credentials() -> dict[str, str]:
            return {"user": "u", "api_key": "k-123"}

        with capture_spans() as finished:
            credentials()
        spans = list(finished())
    finally:
        set_config(None)
    (span,) = spans
    assert span.attributes[semconv.TOOLSPAN_TOOL_CALL_RESULT_INEXACT] is True
    with toolspan.replay(spans), pytest.raises(toolspan.ReplayError, match="cut or redacted when recorded"):
        credentials()


def test_a_replayed_failure_keeps_its_recorded_error_type(fresh_config: None) -> None:
    class Quota(Exception):
        pass

    Quota.__module__, Quota.__qualname__ = "app.errors", "Quota"

    @toolspan.tool
    def lookup(key: str) -> str:
        if key == "missing":
            raise KeyError(key)
        raise Quota("over quota")

    with capture_spans() as recorded:
        for key in ("missing", "quota"):
            with pytest.raises(Exception):  # noqa: B017
                lookup(key)
    spans = list(recorded())
    with capture_spans() as replayed, toolspan.replay(spans):
        with pytest.raises(KeyError):
            lookup("missing")
        with pytest.raises(toolspan.ReplayedToolError):
            lookup("quota")
    assert [s.attributes[semconv.ERROR_TYPE] for s in replayed()] == ["KeyError", "app.errors.Quota"]
    assert [s.attributes[semconv.ERROR_TYPE] for s in spans] == ["KeyError", "app.errors.Quota"]


@pytest.mark.processes
def test_a_tool_called_in_a_spawned_worker_inside_replay_never_runs_its_body(tmp_path: Path) -> None:
    from tests.apps import replay_worker as worker

    marker = tmp_path / "ran"
    with capture_spans() as finished:
        worker.touch(str(tmp_path / "recorded"))
    spans = list(finished())
    context = multiprocessing.get_context("spawn")
    with toolspan.replay(spans), context.Pool(1) as pool:
        outcome = pool.apply(worker.call_touch, (str(marker),))
    assert not marker.exists()  # the body did not run in the worker
    assert outcome.startswith("ReplayError: tool 'touch' was called in a process started while a replay ran")
    # After the replay a worker runs bodies again.
    with context.Pool(1) as pool:
        assert pool.apply(worker.call_touch, (str(marker),)) == "ran"
    assert marker.exists()


# --- the page ---------------------------------------------------------------------------------------------


@pytest.mark.processes
def test_convert_to_html_writes_a_page_for_an_agent_named_with_a_lone_surrogate(tmp_path: Path) -> None:
    source = tmp_path / "trace.json"
    span = {
        "traceId": "a" * 32,
        "spanId": "b" * 16,
        "name": "invoke_agent x",
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": "planner\\udc00"}},
        ],
    }
    doc = (
        '{"resourceSpans": [{"scopeSpans": [{"spans": ['
        + json.dumps(span).replace("\\\\udc00", "\\udc00")
        + "]}]}]}"
    )
    source.write_text(doc)
    out = tmp_path / "page.html"
    proc = subprocess.run(
        [sys.executable, "-m", "toolspan", "convert", str(source), "--to", "html", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    page = out.read_text(encoding="utf-8")
    # The lone surrogate is the text of its escape, as everywhere else (the readers write it so): in the
    # title and in the page's data alike, never a replacement character.
    assert "<title>planner\\udc00 — toolspan</title>" in page
    assert '"title":"planner\\\\udc00"' in page
    assert "\ufffd" not in page


def test_the_page_data_and_the_html_page_agree_on_deep_input() -> None:
    import re

    from toolspan.bridge.model import Span
    from toolspan.bridge.views import to_pages
    from toolspan.page import render_html

    for levels in (100, 256, 257, 995):
        text = "[" * levels + "]" * levels
        span = Span(
            trace_id="a" * 32,
            span_id="b" * 16,
            parent_span_id=None,
            name="execute_tool t",
            start_ns=1,
            end_ns=2,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "t",
                "gen_ai.tool.call.arguments": text,
            },
        )
        pages = to_pages([span])
        html = render_html(pages)
        found = re.search(r'<script id="ts-data" type="application/json">(.*?)</script>', html, re.S)
        assert found is not None
        embedded = json.loads(found.group(1))
        embedded = embedded[0] if isinstance(embedded, list) else embedded
        assert embedded["steps"][0]["input"] == pages[0]["steps"][0]["input"], levels
        assert type(pages[0]["steps"][0]["input"]) is (list if levels <= 256 else str)
