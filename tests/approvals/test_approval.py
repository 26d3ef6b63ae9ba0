"""``toolspan.Approval``: who decided, the wait, the reason and an edit of the arguments on the tool span;
``approve_timeout`` denies by ``"timeout"``; a denied call has no span of its body."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from tests.runner.test_run import events, openai_call, tool_attrs, tool_use
from toolspan import semconv
from toolspan._runner.run import ToolCall, arun_tool_calls, run_tool_calls
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans


def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}: {body}"


def schema(**params: str) -> dict[str, str]:
    """The ``toolspan.tool.parameters`` attribute a gated call records: the JSON Schema of its parameters
    (all required here, each of the JSON type named)."""
    text = json.dumps(
        {
            "additionalProperties": False,
            "properties": {name: {"type": kind} for name, kind in params.items()},
            "required": list(params),
            "type": "object",
        },
        separators=(",", ":"),
        sort_keys=True,
    )
    return {semconv.TOOLSPAN_TOOL_PARAMETERS: text}


SEND_EMAIL = schema(to="string", body="string")


def decided(span: ReadableSpan, **attrs: Any) -> dict[str, Any]:
    """The whole permission_decided attribute dict: ``attrs`` plus the wait, from the two events' times."""
    required, decision = (e.timestamp for e in span.events if e.name.startswith("toolspan.permission_"))
    return {**attrs, semconv.PERMISSION_LATENCY_MS: (decision - required) // 1_000_000}


@pytest.fixture
def spans() -> Iterator[Any]:
    with capture_spans() as finished:
        yield finished


def test_an_edit_runs_the_tool_with_the_edited_arguments_and_keeps_both(spans: Any) -> None:
    def approve(call: ToolCall) -> toolspan.Approval:
        edited = {**call.arguments, "to": "team@example.com"}
        return toolspan.Approval("allow", note="external address replaced", by="alice", arguments=edited)

    model = {"to": "all@example.com", "body": "hi"}
    results = run_tool_calls([tool_use("toolu_1", "send_email", model)], [send_email], approve=approve)
    assert results == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": '"sent to team@example.com: hi"',
            "is_error": False,
        }
    ]
    (span,) = spans()
    assert dict(span.attributes or {}) == {
        **tool_attrs(
            span,
            "send_email",
            "toolu_1",
            model,
            description="Send an email.",
            result="sent to team@example.com: hi",
        ),
        semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS: json.dumps({"to": "team@example.com", "body": "hi"}),
        # The JSON Schema of its parameters, recorded with the approval request (not content).
        **SEND_EMAIL,
    }
    assert events(span) == [
        (semconv.PERMISSION_REQUIRED_EVENT, {}),
        (
            semconv.PERMISSION_DECIDED_EVENT,
            decided(
                span,
                **{
                    semconv.PERMISSION_DECISION: "allow",
                    semconv.PERMISSION_NOTE: "external address replaced",
                    semconv.PERMISSION_DECIDED_BY: "alice",
                },
            ),
        ),
    ]


def test_edited_arguments_are_redacted_like_the_arguments(spans: Any) -> None:
    set_config(Config(redact_keys=frozenset({"token"})))
    try:

        def fetch(url: str, token: str) -> str:
            return url

        approval = toolspan.Approval(
            "allow", by="bob", arguments={"url": "https://b.example", "token": "s3cret"}
        )
        run_tool_calls(
            [openai_call("c1", "fetch", {"url": "https://a.example", "token": "t0ken"})],
            [fetch],
            approve=lambda call: approval,
        )
    finally:
        set_config(None)
    (span,) = spans()
    assert dict(span.attributes or {}) == {
        **tool_attrs(
            span,
            "fetch",
            "c1",
            {"url": "https://a.example", "token": "[REDACTED]"},
            result="https://b.example",
        ),
        semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS: json.dumps(
            {"url": "https://b.example", "token": "[REDACTED]"}
        ),
        # The recorded copy lost the token: the digest of the whole arguments tells the call apart.
        semconv.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST: "sha256:"
        + hashlib.sha256(b'{"token":"t0ken","url":"https://a.example"}').hexdigest(),
        # So did the edit's: its digest says so (an audit then reads its [REDACTED] as unknown).
        semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS_DIGEST: "sha256:"
        + hashlib.sha256(b'{"token":"s3cret","url":"https://b.example"}').hexdigest(),
        **schema(url="string", token="string"),
    }


def test_edited_arguments_and_the_note_are_not_recorded_without_content_capture(spans: Any) -> None:
    set_config(Config(capture_content=False))
    try:
        approval = toolspan.Approval(
            "allow", note="private", by="carol", arguments={"to": "x@y.z", "body": "b"}
        )
        (result,) = run_tool_calls(
            [tool_use("t1", "send_email", {"to": "a@b.c", "body": "b"})],
            [send_email],
            approve=lambda c: approval,
        )
    finally:
        set_config(None)
    assert result["content"] == '"sent to x@y.z: b"'
    (span,) = spans()
    content = {
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
        semconv.OI_INPUT_VALUE,
        semconv.OI_INPUT_MIME_TYPE,
        semconv.GEN_AI_TOOL_CALL_RESULT,
        semconv.OI_OUTPUT_VALUE,
        semconv.OI_OUTPUT_MIME_TYPE,
    }
    expected = tool_attrs(span, "send_email", "t1", {}, description="Send an email.", result=None)
    assert dict(span.attributes or {}) == {
        **{k: v for k, v in expected.items() if k not in content},
        **SEND_EMAIL,  # the parameters describe the tool, not the call: recorded whatever the capture
    }
    assert events(span)[1] == (
        semconv.PERMISSION_DECIDED_EVENT,
        decided(span, **{semconv.PERMISSION_DECISION: "allow", semconv.PERMISSION_DECIDED_BY: "carol"}),
    )


def test_edited_arguments_that_do_not_fit_fail_the_call_without_running_it(spans: Any) -> None:
    ran: list[str] = []

    def greet(name: str) -> str:
        ran.append(name)
        return name

    approval = toolspan.Approval("allow", arguments={"nom": "x"})
    (result,) = run_tool_calls([tool_use("t1", "greet", {"name": "a"})], [greet], approve=lambda c: approval)
    assert result["is_error"] is True
    assert result["content"].startswith("TypeError: ")
    assert ran == []
    (span,) = spans()
    assert (span.attributes or {})[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_FAILED


def test_arguments_that_are_not_a_mapping_deny_with_a_precise_note(spans: Any) -> None:
    approval = toolspan.Approval("allow", arguments=["a"])  # type: ignore[arg-type]
    (result,) = run_tool_calls(
        [tool_use("t1", "send_email", {"to": "a", "body": "b"})], [send_email], approve=lambda c: approval
    )
    assert result["content"] == (
        "PermissionDenied: approval failed: ValueError: Approval.arguments must be a mapping, got list"
    )


def test_an_approver_that_does_not_answer_in_time_denies_by_timeout(spans: Any) -> None:
    release = threading.Event()
    ran: list[str] = []

    def wipe(path: str) -> str:
        ran.append(path)
        return path

    def approve(call: ToolCall) -> bool:
        release.wait(30)
        return True

    try:
        (result,) = run_tool_calls(
            [tool_use("t1", "wipe", {"path": "/"})], [wipe], approve=approve, approve_timeout=0.05
        )
    finally:
        release.set()
    assert result == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": "PermissionDenied: no decision within 0.05 s",
        "is_error": True,
    }
    assert ran == []
    (span,) = spans()
    assert dict(span.attributes or {}) == {
        **tool_attrs(
            span, "wipe", "t1", {"path": "/"}, state=semconv.STATE_DENIED, error_type="toolspan.ToolDenied"
        ),
        **schema(path="string"),
    }
    assert events(span) == [
        (semconv.PERMISSION_REQUIRED_EVENT, {}),
        (
            semconv.PERMISSION_DECIDED_EVENT,
            decided(
                span,
                **{
                    semconv.PERMISSION_DECISION: "deny",
                    semconv.PERMISSION_NOTE: "no decision within 0.05 s",
                    semconv.PERMISSION_DECIDED_BY: "timeout",
                },
            ),
        ),
    ]


def test_an_approver_that_answers_in_time_is_obeyed_with_a_timeout(spans: Any) -> None:
    (result,) = run_tool_calls(
        [tool_use("t1", "send_email", {"to": "a", "body": "b"})],
        [send_email],
        approve=lambda call: toolspan.Approval("allow", by="dave"),
        approve_timeout=30,
    )
    assert result["content"] == '"sent to a: b"'
    (span,) = spans()
    assert events(span)[1] == (
        semconv.PERMISSION_DECIDED_EVENT,
        decided(span, **{semconv.PERMISSION_DECISION: "allow", semconv.PERMISSION_DECIDED_BY: "dave"}),
    )


@pytest.mark.parametrize("asynchronous", [True, False])
def test_arun_times_out_sync_and_async_approvers(spans: Any, asynchronous: bool) -> None:
    async def main() -> list[dict[str, Any]]:
        never = asyncio.Event()
        release = threading.Event()

        async def approve_async(call: ToolCall) -> bool:
            await never.wait()
            return True

        def approve_sync(call: ToolCall) -> bool:
            release.wait(30)
            return True

        async def send(to: str) -> str:
            return to

        try:
            return await arun_tool_calls(
                [tool_use("t1", "send", {"to": "a"})],
                {"send": send},
                approve=approve_async if asynchronous else approve_sync,
                approve_timeout=0.05,
            )
        finally:
            release.set()

    (result,) = asyncio.run(main())
    assert result["content"] == "PermissionDenied: no decision within 0.05 s"
    (span,) = spans()
    assert (span.attributes or {})[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED
    assert dict(span.events[1].attributes or {})[semconv.PERMISSION_DECIDED_BY] == "timeout"


@pytest.mark.parametrize("timeout", [0, -1, True, "5", float("nan"), float("inf"), 1e300, -0.0])
def test_a_bad_approve_timeout_is_refused_before_running(spans: Any, timeout: Any) -> None:
    with pytest.raises(ValueError, match="approve_timeout must be a positive, finite number of seconds"):
        run_tool_calls(
            [tool_use("t1", "send_email", {"to": "a", "body": "b"})],
            [send_email],
            approve=bool,
            approve_timeout=timeout,
        )
    assert list(spans()) == []


def test_a_denied_call_has_no_span_of_its_body(spans: Any) -> None:
    @toolspan.tool
    def lookup(key: str) -> str:
        return key

    def purge(key: str) -> str:
        lookup(key)  # a tool the body would call: its span would be a child of the denied call's
        return key

    def approve(call: ToolCall) -> toolspan.Approval:
        return toolspan.Approval("deny", note="not now", by="erin")

    (result,) = run_tool_calls([tool_use("t1", "purge", {"key": "k"})], [purge], approve=approve)
    assert result["content"] == "PermissionDenied: not now"
    (span,) = spans()  # the purge span alone: nothing ran below it
    assert span.name == "execute_tool purge"
    assert (span.attributes or {})[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED
    # and an allowed call of the same body does have its child
    run_tool_calls([tool_use("t2", "purge", {"key": "k"})], [purge], approve=lambda c: True)
    assert sorted(s.name for s in spans()) == [
        "execute_tool lookup",
        "execute_tool purge",
        "execute_tool purge",
    ]


def test_arun_runs_a_blocking_sync_approver_off_the_event_loop(spans: Any) -> None:
    async def main() -> list[dict[str, Any]]:
        release = threading.Event()

        def approve(call: ToolCall) -> bool:
            return release.wait(10)  # a person deciding; False (deny) if the loop never got to release it

        async def send(to: str) -> str:
            return to

        async def decide_soon() -> None:
            await asyncio.sleep(0.01)
            release.set()

        runs = arun_tool_calls([tool_use("t1", "send", {"to": "a"})], {"send": send}, approve=approve)
        results, _ = await asyncio.gather(runs, decide_soon())
        return results

    assert asyncio.run(main())[0]["content"] == '"a"'
