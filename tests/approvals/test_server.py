"""The application side of the control channel in process: ``toolspan.ServerApprover`` fails closed when the
server cannot be reached, honours ``approve_timeout`` against a real server that has no decision, refuses a
decision made for another tool under the same call id; the decision chain never runs the body of a call whose
cancellation came first, and ``check_cancelled`` does nothing outside a supervised call."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace

import toolspan
from tests.support.instrumentation import Spans
from tests.support.server import free_port, running_server
from toolspan import semconv
from toolspan._approvals.cancel import Supervision
from toolspan.errors import ToolCancelled

CALL = {"type": "tool_use", "id": "toolu_1", "name": "remove", "input": {"path": "/x"}}


def test_an_unreachable_server_denies_the_call(spans: Spans) -> None:
    ran: list[str] = []

    def remove(path: str) -> str:
        ran.append(path)
        return "removed"

    approver = toolspan.ServerApprover(f"http://127.0.0.1:{free_port()}", unreachable_for=0.3)
    (result,) = toolspan.run_tool_calls([CALL], [remove], approve=approver)
    assert ran == []
    assert result["is_error"] is True
    assert "could not be reached" in result["content"]
    (span,) = [s for s in spans() if s.name == "execute_tool remove"]
    assert span.attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED


@pytest.mark.processes
def test_approve_timeout_denies_while_the_server_has_no_decision(spans: Spans, tmp_path: Path) -> None:
    ran: list[str] = []

    def remove(path: str) -> str:
        ran.append(path)
        return "removed"

    with running_server(tmp_path) as server:
        approver = toolspan.ServerApprover(server.url)
        (result,) = toolspan.run_tool_calls([CALL], [remove], approve=approver, approve_timeout=0.5)
    assert ran == []
    assert result["is_error"] is True
    (span,) = [s for s in spans() if s.name == "execute_tool remove"]
    (decided,) = [e for e in span.events if e.name == semconv.PERMISSION_DECIDED_EVENT]
    assert decided.attributes[semconv.PERMISSION_DECIDED_BY] == "timeout"


def test_a_decision_is_taken_only_for_this_very_call() -> None:
    """A decision names its call (trace and execution id), its tool and the digest of the arguments shown:
    the approver takes it only when all three are its own; a decision made on another span is taken only as
    the one its re-issued call resumes (same model call id, tool and arguments)."""
    from toolspan._util.ids import arguments_sha256
    from toolspan.testing import capture_spans

    approver = toolspan.ServerApprover("http://127.0.0.1:1")
    seen: dict[str, Any] = {}

    @toolspan.tool
    def remove(path: str) -> None:
        """Remove a path."""
        ctx = trace.get_current_span().get_span_context()
        own = (f"{ctx.trace_id:032x}", f"exec_{ctx.span_id:016x}")
        shown = arguments_sha256('{"path": "/x"}')
        call = toolspan.ToolCall("toolu_1", "remove", {"path": path}, "anthropic")
        mine = {
            "decision": "allow",
            "tool": "remove",
            "by": "a",
            "trace_id": own[0],
            "execution_id": own[1],
            "span_id": own[1][5:],
            "call_id": "toolu_1",
            "shown": shown,
        }
        seen["this call"] = approver._approval(call, mine, own, shown, resumed=False).decision
        refused = {
            "another tool": ({**mine, "tool": "other"}, False),
            "other arguments": ({**mine, "shown": arguments_sha256('{"path": "/"}')}, False),
            "another span": ({**mine, "execution_id": "exec_00000000000000ff"}, False),
            "another trace": ({**mine, "trace_id": "f" * 32}, False),
            "a resume of this very span": (mine, True),
            "a resume of another call id": (
                {**mine, "execution_id": "exec_00000000000000ff", "call_id": "x"},
                True,
            ),
        }
        for name, (decision, resumed) in refused.items():
            with pytest.raises(LookupError, match="a decision is never given to another call") as caught:
                approver._approval(call, decision, own, shown, resumed=resumed)
            seen[name] = str(caught.value)
        other = {**mine, "execution_id": "exec_00000000000000ff", "span_id": "00000000000000ff"}
        seen["resumed"] = approver._approval(call, other, own, shown, resumed=True).decision

    with capture_spans() as finished:
        remove("/x")
    assert seen["this call"] == "allow"
    assert seen["resumed"] == "allow"
    assert "for tool 'other'" in seen["another tool"]
    assert "on other arguments" in seen["other arguments"]
    assert "on another call" in seen["another span"]
    assert "on another call" in seen["another trace"]
    (span,) = finished()
    (link,) = span.links  # the resumed decision links back to the span it was made on
    assert link.context.span_id == 0xFF


class _PreCancelled:
    """An approver that allows, and whose cancel request for the call arrives before its body starts."""

    def __init__(self) -> None:
        self.supervised: list[str] = []

    def __call__(self, call: toolspan.ToolCall) -> toolspan.Approval:
        return toolspan.Approval("allow", by="test")

    @contextlib.contextmanager
    def supervise(self, execution_id: str) -> Iterator[Supervision]:
        self.supervised.append(execution_id)
        supervision = Supervision(execution_id)
        supervision.request("ops", "too late")
        yield supervision


@pytest.mark.parametrize("kind", ["sync", "async", "gen"])
def test_a_call_cancelled_before_its_body_starts_never_runs_it(spans: Spans, kind: str) -> None:
    ran: list[str] = []

    def remove(path: str) -> str:
        ran.append(path)
        return "removed"

    async def aremove(path: str) -> str:
        ran.append(path)
        return "removed"

    def gremove(path: str) -> Any:
        ran.append(path)
        yield "removed"

    fn = {"sync": remove, "async": aremove, "gen": gremove}[kind]
    approver = _PreCancelled()
    (result,) = toolspan.run_tool_calls([CALL], {"remove": fn}, approve=approver)
    assert ran == []
    assert len(approver.supervised) == 1
    assert result["content"] == "ToolCancelled: too late"
    (span,) = [s for s in spans() if s.name == "execute_tool remove"]
    assert span.attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_CANCELLED
    assert span.attributes[semconv.TOOLSPAN_TOOL_CANCELLED_BY] == "ops"
    assert span.attributes[semconv.TOOLSPAN_TOOL_CANCEL_NOTE] == "too late"


def test_check_cancelled_outside_a_supervised_call_does_nothing(spans: Spans) -> None:
    @toolspan.tool
    def step() -> str:
        toolspan.check_cancelled()
        return "ok"

    assert step() == "ok"
    toolspan.check_cancelled()
    error = ToolCancelled(by="ops")
    assert str(error) == "cancelled by ops"
    assert error.by == "ops"


def test_the_approver_never_shows_its_token() -> None:
    approver = toolspan.ServerApprover("http://127.0.0.1:1", token="s3cret")
    assert "s3cret" not in repr(approver)
    with pytest.raises(ValueError, match="http"):
        toolspan.ServerApprover("ftp://x")
    with pytest.raises(ValueError, match="unreachable_for"):
        toolspan.ServerApprover("http://x", unreachable_for=0)


class _Watching:
    """An approver that allows and supervises, with no cancel request (the supervision is kept)."""

    def __init__(self) -> None:
        self.supervisions: list[Supervision] = []

    def __call__(self, call: toolspan.ToolCall) -> toolspan.Approval:
        return toolspan.Approval("allow", by="test")

    @contextlib.contextmanager
    def supervise(self, execution_id: str) -> Iterator[Supervision]:
        supervision = Supervision(execution_id)
        self.supervisions.append(supervision)
        yield supervision


def test_the_callers_own_cancellation_stays_a_cancellation(spans: Spans) -> None:
    """A supervised async body cancelled by its caller (a timeout) is not a cancel request: the caller gets
    its CancelledError/TimeoutError, the span ends CANCELLED without ``cancelled_by``."""

    async def slow(path: str) -> str:
        await asyncio.sleep(30)
        return "done"

    approver = _Watching()

    async def main() -> None:
        await asyncio.wait_for(toolspan.arun_tool_calls([CALL], {"remove": slow}, approve=approver), 0.5)

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(main())
    assert len(approver.supervisions) == 1
    assert not approver.supervisions[0].requested
    (span,) = [s for s in spans() if s.name == "execute_tool remove"]
    assert span.attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_CANCELLED
    assert span.attributes[semconv.ERROR_TYPE] == "CancelledError"
    assert semconv.TOOLSPAN_TOOL_CANCELLED_BY not in span.attributes


def test_a_request_cancels_a_running_async_body_and_the_caller_gets_a_result(spans: Spans) -> None:
    started = threading.Event()

    async def slow(path: str) -> str:
        started.set()
        await asyncio.sleep(30)
        return "done"

    approver = _Watching()

    def cancel_when_started() -> None:
        assert started.wait(10)
        approver.supervisions[0].request("ops", None)

    helper = threading.Thread(target=cancel_when_started)
    helper.start()
    (result,) = asyncio.run(toolspan.arun_tool_calls([CALL], {"remove": slow}, approve=approver))
    helper.join()
    assert result["content"] == "ToolCancelled: cancelled by ops"
    (span,) = [s for s in spans() if s.name == "execute_tool remove"]
    assert span.attributes[semconv.TOOLSPAN_TOOL_CANCELLED_BY] == "ops"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.processes)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "store.db")
    else:
        yield request.getfixturevalue("postgres").fresh_url()


def _decision(span_id: int, decision: str, by: str, decided_ns: int, call_id: str = "c") -> Any:
    from toolspan.server._store import control

    return control.DecisionRow(
        "a" * 32, f"{span_id:016x}", f"exec_{span_id:016x}", call_id, "t", decision, "0" * 64, None, by, None,
        None, decided_ns,
    )  # fmt: skip


def test_retention_drops_old_decisions_and_cancel_requests(store_url: str) -> None:
    from toolspan.server._store import control
    from toolspan.server._store.engines import open_store

    store = open_store(store_url)
    old_key, new_key = ("a" * 32, f"{1:016x}"), ("a" * 32, f"{2:016x}")
    try:
        old = _decision(1, "allow", "a", 1_000)
        new = _decision(2, "deny", "b", 5_000)
        for row in (old, new):
            assert control.run(store, control.insert_decision, row) is row
        cancel = control.CancelRow(
            "a" * 32, "00000000000000aa", "exec_00000000000000aa", None, "ops", None, 1_000
        )
        control.run(store, control.insert_cancel, cancel)
        control.run(store, control.polled, "a" * 32, "00000000000000aa", 1_000)
        # A second decision on a call: the first stands.
        late = _decision(2, "allow", "z", 6_000)
        assert control.run(store, control.insert_decision, late) == new
        assert control.run(store, control.prune, 2_000) == 3
        assert control.run(store, control.decision_for, old_key) == []
        assert control.run(store, control.decision_for, new_key) == [new]
        assert control.run(store, control.decision_for, (None, new_key[1])) == [new]
        assert control.run(store, control.decisions_of_call, "c") == [new]
        assert control.run(store, control.cancels_for, ["00000000000000aa"]) == []
        assert control.run(store, control.poll_until, "a" * 32, "00000000000000aa") is None
        # Nanosecond times hold on both engines (PostgreSQL's INTEGER would not).
        now = _decision(3, "allow", "a", 1_764_000_000 * 10**9)
        assert control.run(store, control.insert_decision, now) is now
        assert control.run(store, control.decision_for, ("a" * 32, f"{3:016x}")) == [now]
    finally:
        store.close()
    # Stored durably: the decision is there when the store opens again.
    again = open_store(store_url)
    try:
        assert control.run(again, control.decision_for, new_key) == [new]
    finally:
        again.close()


def test_two_deciders_whose_transactions_overlap_both_get_the_first_decision(store_url: str) -> None:
    """The second decider's transaction starts before the first commits (on PostgreSQL both run at once):
    its insert waits for the first, stores nothing, and returns the first decision, with no error."""
    from toolspan.server._store import control
    from toolspan.server._store.engines import open_store

    store = open_store(store_url)
    first = _decision(9, "allow", "first", 1_000)
    second = _decision(9, "deny", "second", 2_000)
    cancel_first = control.CancelRow(
        "a" * 32, "00000000000000bb", "exec_00000000000000bb", None, "first", None, 1
    )
    cancel_second = control.CancelRow(
        "a" * 32, "00000000000000bb", "exec_00000000000000bb", None, "second", None, 2
    )
    outcome: list[object] = []
    try:
        with store.transaction() as conn:
            assert control.insert_decision(conn, first) is first
            assert control.insert_cancel(conn, cancel_first) is cancel_first
            rival = threading.Thread(
                target=lambda: outcome.extend(
                    (
                        control.run(store, control.insert_decision, second),
                        control.run(store, control.insert_cancel, cancel_second),
                    )
                )
            )
            rival.start()
            rival.join(0.5)
            assert rival.is_alive()  # waiting for the first transaction, not refused
        rival.join(10)
        assert outcome == [first, cancel_first]
        assert control.run(store, control.decision_for, ("a" * 32, f"{9:016x}")) == [first]
    finally:
        store.close()


@pytest.mark.processes
def test_the_approver_warns_when_nothing_exports_the_waiting_call(
    spans: Spans, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Without pending records the server never lists the call, so no one can decide it: the approver says
    so, once, naming the setting; with a ``PendingSpanProcessor`` to that server the call is in the inbox
    and nothing is said."""

    def remove(path: str) -> str:
        return "removed"

    second = {**CALL, "id": "toolu_2"}
    with running_server(tmp_path) as server:
        approver = toolspan.ServerApprover(server.url)
        with caplog.at_level("WARNING", logger="toolspan._approvals.server_client"):
            toolspan.run_tool_calls(
                [CALL, second], [remove], approve=approver, approve_timeout=0.3, parallel=False
            )
        silent = _exported_run(server, remove)
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolspan._approvals.server_client"]
    assert len(warnings) == 1  # once per approver, not once per call
    assert warnings[0].startswith(
        "toolspan: ServerApprover: nothing exports a pending record of tool call 'toolu_1' (remove):"
        f" toolspan serve at {server.url} cannot list it in its inbox"
    )
    assert "TOOLSPAN_PENDING_SPANS=true" in warnings[0]
    assert silent == (["toolu_3"], [])


def _exported_run(server: Any, remove: Any) -> tuple[list[str], list[str]]:
    """A call gated by a fresh approver whose spans go to ``server`` with pending records: ``(the call ids
    the server's inbox listed while it waited, the approver's warnings)``."""
    import logging

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider

    from tests.support.server import wait_for
    from toolspan.exporters.pending import PendingSpanProcessor
    from toolspan.testing import installed_tracer_provider

    exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/traces")
    provider = TracerProvider()
    provider.add_span_processor(PendingSpanProcessor(exporter))
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("toolspan._approvals.server_client").addHandler(handler)
    listed: list[str] = []
    try:
        with installed_tracer_provider(provider):
            waiter = threading.Thread(
                target=toolspan.run_tool_calls,
                args=([{**CALL, "id": "toolu_3"}], [remove]),
                kwargs={"approve": toolspan.ServerApprover(server.url), "approve_timeout": 5},
            )
            waiter.start()
            entries = wait_for(lambda: server.get_json("/api/control/waiting")["waiting"], "the call listed")
            listed = [e["call_id"] for e in entries]
            waiter.join(10)
    finally:
        logging.getLogger("toolspan._approvals.server_client").removeHandler(handler)
        provider.shutdown()
    return listed, [m for m in said if "ServerApprover" in m]


@pytest.mark.processes
def test_deciding_a_call_the_server_never_saw_says_why_it_may_be_unknown(tmp_path: Path) -> None:
    """An application that sends no pending records leaves its waiting call unseen: the 404 names the
    setting that would have shown it, on deciding and on cancelling alike."""
    import json

    with running_server(tmp_path, "--decider", "ops=ops-token") as server:
        server.headers = {"Authorization": "Bearer ops-token", "Content-Type": "application/json"}
        body = {"execution_id": "exec_00000000000000ab", "decision": "allow", "shown": "0" * 64}
        decided = server.request("POST", "/api/control/decisions", json.dumps(body).encode())
        cancel = {"execution_id": "exec_00000000000000ab"}
        cancelled = server.request("POST", "/api/control/cancels", json.dumps(cancel).encode())
    for status, _, answer in (decided, cancelled):
        assert status == 404
        assert json.loads(answer)["error"] == (
            "no tool call exec_00000000000000ab is known here (a call shows here while it waits or runs only"
            " when its application exports pending records: TOOLSPAN_PENDING_SPANS=true)"
        )
