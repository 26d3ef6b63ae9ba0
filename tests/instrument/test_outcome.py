"""How spans end, and that content capture off leaves no user content in any exported span."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import toolspan
from tests.support.instrumentation import Spans
from toolspan import semconv
from toolspan.config import Config, set_config

pytestmark = pytest.mark.usefixtures("content_off")

# A text no span may hold (a failing check names it: the same on every run).
TOKEN = "9f3c2a7e5b1d4068c0e8a6f2d4b9713e"


def _exported(spans: Spans) -> str:
    """Every finished span whole, as the SDK's own JSON."""
    return "\n".join(span.to_json() for span in spans())


def _failed_events(span: ReadableSpan) -> list[tuple[str, dict[str, Any]]]:
    return [(event.name, dict(event.attributes or {})) for event in span.events]


def test_tool_failure_keeps_the_type_and_drops_the_message(spans: Spans) -> None:
    token = TOKEN

    @toolspan.tool
    def lookup(key: str) -> str:
        raise ValueError(f"token={token}")

    with pytest.raises(ValueError, match=token):  # the user's call is untouched
        lookup(token)
    (span,) = spans()
    assert token not in _exported(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "ValueError"
    assert _failed_events(span) == [("exception", {"exception.type": "ValueError"})]
    assert span.attributes is not None
    assert span.attributes["error.type"] == "ValueError"
    assert span.attributes["toolspan.tool.state"] == "FAILED"


def test_capture_on_still_records_message_and_stacktrace(spans: Spans) -> None:
    set_config(Config())

    @toolspan.tool
    def lookup() -> str:
        raise ValueError("city=Paris token=s3cr3tZq")

    with pytest.raises(ValueError, match="token=s3cr3tZq"):
        lookup()
    (span,) = spans()
    assert span.status.description == "ValueError: city=Paris token=[REDACTED]"
    ((name, attrs),) = _failed_events(span)
    assert name == "exception"
    assert attrs["exception.type"] == "ValueError"
    assert attrs["exception.message"] == "city=Paris token=[REDACTED]"
    assert 'raise ValueError("city=Paris token=[REDACTED]")' in str(attrs["exception.stacktrace"])
    assert "s3cr3tZq" not in span.to_json()  # (not a string a random id can hold: hex has no 's')


def test_agent_plan_and_generator_failures_leak_nothing(spans: Spans) -> None:
    token = TOKEN

    @toolspan.tool
    def stream() -> Any:
        yield 1
        raise RuntimeError(f"secret {token}")

    def run_all() -> None:
        with toolspan.agent("a", input=f"in {token}") as run:
            run.set_output(f"out {token}")
            toolspan.thought(f"thinking {token}")
            with toolspan.plan("p", input={"token": token}):
                list(stream())

    with pytest.raises(RuntimeError):
        run_all()

    async def main() -> None:
        @toolspan.agent
        async def helper(question: str) -> str:
            raise KeyError(token)

        with pytest.raises(KeyError):
            await helper(token)

    asyncio.run(main())
    assert {span.name for span in spans()} == {
        "invoke_agent a",
        "plan p",
        "execute_tool stream",
        "invoke_agent helper",
    }
    assert token not in _exported(spans)
    for span in spans():
        assert span.status.description in {"RuntimeError", "KeyError"}


def test_permission_notes_are_content(spans: Spans) -> None:
    token = TOKEN

    @toolspan.tool
    def act() -> None:
        toolspan.record_permission_required(note=f"needs {token}")
        toolspan.record_permission_decided("deny", note=f"no: {token}")
        raise toolspan.ToolDenied(f"denied {token}")

    with pytest.raises(toolspan.ToolDenied):
        act()
    (span,) = spans()
    assert token not in _exported(spans)
    assert _failed_events(span) == [
        ("toolspan.permission_required", {}),
        ("toolspan.permission_decided", {"toolspan.permission.decision": "deny"}),
    ]


def test_run_tool_calls_keep_the_error_result_but_not_in_telemetry(spans: Spans) -> None:
    token = TOKEN

    def fetch(url: str) -> str:
        raise ConnectionError(f"refused for {token}")

    def approve(call: toolspan.ToolCall) -> toolspan.Approval:
        return toolspan.Approval("deny", note=f"not with {token}")

    function = {"name": "fetch", "arguments": json.dumps({"url": token})}
    calls = [{"id": "c1", "type": "function", "function": function}]
    results = toolspan.run_tool_calls(calls, {"fetch": fetch})
    denied = toolspan.run_tool_calls(calls, {"fetch": fetch}, approve=approve)
    # What the model gets back is the user's call's behaviour: it keeps the message.
    assert results == [
        {"role": "tool", "tool_call_id": "c1", "content": f"ConnectionError: refused for {token}"}
    ]
    assert denied == [
        {"role": "tool", "tool_call_id": "c1", "content": f"PermissionDenied: not with {token}"}
    ]
    failed, refused = [span for span in spans() if span.name == "execute_tool fetch"]
    assert token not in _exported(spans)
    assert failed.status.description == "ConnectionError"
    assert refused.attributes is not None
    assert refused.attributes[semconv.TOOLSPAN_TOOL_STATE] == "DENIED"
