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
from tests._server import free_port, running_server

import toolspan
from _instrumentation import Spans
from toolspan import semconv
from toolspan._decisions.cancel import Supervision
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


def test_a_decision_for_another_tool_or_other_arguments_is_refused() -> None:
    """A decision names its tool and the span it was made on: a call that reuses the id for another tool is
    denied, and so is a call re-issued in another span (a restart) whose recorded arguments differ."""
    from toolspan.testing import capture_spans

    approver = toolspan.ServerApprover("http://127.0.0.1:1")
    seen: dict[str, Any] = {}

    @toolspan.tool
    def remove(path: str) -> None:
        """Remove a path."""
        here = format(trace.get_current_span().get_span_context().span_id, "016x")
        recorded = {"attributes": {semconv.GEN_AI_TOOL_CALL_ARGUMENTS: '{"path": "/x"}'}}
        call = toolspan.ToolCall("toolu_1", "remove", {"path": path}, "anthropic")
        mine = {"decision": "allow", "tool": "remove", "by": "a", "span_id": here}
        seen["same span"] = approver._approval(call, mine, None, None).decision
        other = {**mine, "span_id": "00000000000000ff"}
        seen["same arguments"] = approver._approval(call, other, None, recorded).decision
        for name, decided_on in (
            ("other arguments", {"attributes": {semconv.GEN_AI_TOOL_CALL_ARGUMENTS: '{"path": "/"}'}}),
            ("decided span unknown", None),
        ):
            with pytest.raises(LookupError, match="a decision is never given to another call") as caught:
                approver._approval(call, other, None, decided_on)
            seen[name] = str(caught.value)
        with pytest.raises(LookupError, match="not 'other'"):
            approver._approval(toolspan.ToolCall("toolu_1", "other", {}, "anthropic"), mine, None, None)

    with capture_spans():
        remove("/x")
    assert seen["same span"] == "allow"
    assert seen["same arguments"] == "allow"
    assert "made on other arguments" in seen["other arguments"]
    assert "cannot compare" in seen["decided span unknown"]


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


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "store.db")
    else:
        yield request.getfixturevalue("postgres").fresh_url()


def test_retention_drops_old_decisions_and_cancel_requests(store_url: str) -> None:
    from toolspan.server._store import control
    from toolspan.server._store.api import open_store

    store = open_store(store_url)
    try:
        old = control.DecisionRow("c-old", None, None, None, "t", "allow", None, "a", None, 1_000)
        new = control.DecisionRow("c-new", None, None, None, "t", "deny", None, "b", None, 5_000)
        for row in (old, new):
            assert control.run(store, control.insert_decision, row) is row
        cancel = control.CancelRow("exec_00000000000000aa", None, None, "ops", None, 1_000)
        control.run(store, control.insert_cancel, cancel)
        # A second decision on a call: the first stands.
        late = control.DecisionRow("c-new", None, None, None, "t", "allow", None, "z", None, 6_000)
        assert control.run(store, control.insert_decision, late) == new
        assert control.run(store, control.prune, 2_000) == 2
        assert control.run(store, control.decision_for, "c-old") is None
        assert control.run(store, control.decision_for, "c-new") == new
        assert control.run(store, control.cancels_for, ["exec_00000000000000aa"]) == []
        # Nanosecond times hold on both engines (PostgreSQL's INTEGER would not).
        now = control.DecisionRow(
            "c-now", None, None, None, "t", "allow", None, "a", None, 1_764_000_000 * 10**9
        )
        assert control.run(store, control.insert_decision, now) is now
        assert control.run(store, control.decision_for, "c-now") == now
    finally:
        store.close()
    # Stored durably: the decision is there when the store opens again.
    again = open_store(store_url)
    try:
        assert control.run(again, control.decision_for, "c-new") == new
    finally:
        again.close()


def test_two_deciders_whose_transactions_overlap_both_get_the_first_decision(store_url: str) -> None:
    """The second decider's transaction starts before the first commits (on PostgreSQL both run at once):
    its insert waits for the first, stores nothing, and returns the first decision, with no error."""
    from toolspan.server._store import control
    from toolspan.server._store.api import open_store

    store = open_store(store_url)
    first = control.DecisionRow("c-race", None, None, None, "t", "allow", None, "first", None, 1_000)
    second = control.DecisionRow("c-race", None, None, None, "t", "deny", None, "second", None, 2_000)
    cancel_first = control.CancelRow("exec_00000000000000bb", None, None, "first", None, 1_000)
    cancel_second = control.CancelRow("exec_00000000000000bb", None, None, "second", None, 2_000)
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
        assert control.run(store, control.decision_for, "c-race") == first
    finally:
        store.close()


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
        with caplog.at_level("WARNING", logger="toolspan._calls.remote"):
            toolspan.run_tool_calls(
                [CALL, second], [remove], approve=approver, approve_timeout=0.3, parallel=False
            )
        silent = _exported_run(server, remove)
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolspan._calls.remote"]
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
    from tests._server import wait_for

    from toolspan.exporters.pending import PendingSpanProcessor
    from toolspan.testing import installed_tracer_provider

    exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/traces")
    provider = TracerProvider()
    provider.add_span_processor(PendingSpanProcessor(exporter))
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("toolspan._calls.remote").addHandler(handler)
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
        logging.getLogger("toolspan._calls.remote").removeHandler(handler)
        provider.shutdown()
    return listed, [m for m in said if "ServerApprover" in m]
