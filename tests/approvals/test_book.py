"""``toolspan.ApprovalBook`` in one process: booking a waiting call, deciding it from outside, matching a
re-issued call by its id with a link to the span that waited, and precise errors for bad decisions."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from toolspan import semconv
from toolspan._approvals.book import WaitingCall
from toolspan._util.words import choices
from toolspan.testing import capture_spans

CALL = {"type": "tool_use", "id": "toolu_9", "name": "deploy", "input": {"env": "prod"}}


def deploy(env: str) -> str:
    """Deploy."""
    return f"deployed {env}"


@pytest.fixture
def spans() -> Iterator[Any]:
    with capture_spans() as finished:
        yield finished


def _wait_for(book: toolspan.ApprovalBook) -> list[WaitingCall]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        waiting = book.waiting()
        if waiting:
            return waiting
        time.sleep(0.01)
    raise AssertionError("no call was booked")


def _ids(span: ReadableSpan) -> tuple[str, str]:
    assert span.context is not None
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def test_a_waiting_call_is_booked_and_runs_once_decided(tmp_path: Path, spans: Any) -> None:
    book = toolspan.ApprovalBook(tmp_path / "book.db", poll_interval=0.01)
    results: list[Any] = []
    runner = threading.Thread(
        target=lambda: results.append(toolspan.run_tool_calls([CALL], [deploy], approve=book))
    )
    runner.start()
    (waiting,) = _wait_for(book)
    assert (waiting.call_id, waiting.tool, waiting.arguments) == ("toolu_9", "deploy", {"env": "prod"})
    assert results == []
    book.decide("toolu_9", True, note="change window open", by="ops-lead", arguments={"env": "staging"})
    runner.join(30)
    assert results[0][0]["content"] == '"deployed staging"'
    assert book.waiting() == []
    (span,) = spans()
    assert _ids(span) == (waiting.trace_id, waiting.span_id)
    assert span.links == ()  # nothing to resume: this span is the one that waited
    attrs = dict(span.attributes or {})
    assert semconv.TOOLSPAN_APPROVAL_RESUMES not in attrs
    assert attrs[semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS] == '{"env": "staging"}'
    decided = span.events[1]
    assert decided.timestamp is not None
    assert dict(decided.attributes or {}) == {
        semconv.PERMISSION_DECISION: "allow",
        semconv.PERMISSION_NOTE: "change window open",
        semconv.PERMISSION_DECIDED_BY: "ops-lead",
        # from this span's permission_required (the book booked the call just after it)
        semconv.PERMISSION_LATENCY_MS: (decided.timestamp - span.events[0].timestamp) // 1_000_000,
    }


def test_a_reissued_call_is_matched_by_id_and_links_the_span_that_waited(tmp_path: Path, spans: Any) -> None:
    book = toolspan.ApprovalBook(tmp_path / "book.db", poll_interval=0.01)
    (first,) = toolspan.run_tool_calls([CALL], [deploy], approve=book, approve_timeout=0.05)
    assert first["content"] == "PermissionDenied: no decision within 0.05 s"
    (waiting,) = book.waiting()  # still waiting in the book
    book.decide("toolu_9", "deny", note="freeze", by="cab")
    (second,) = toolspan.run_tool_calls([CALL], [deploy], approve=book)
    assert second["content"] == "PermissionDenied: freeze"
    timed_out, resumed = spans()
    assert _ids(timed_out) == (waiting.trace_id, waiting.span_id)
    assert [(f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") for link in resumed.links] == [
        (waiting.trace_id, waiting.span_id)
    ]
    assert dict(resumed.links[0].attributes or {}) == {semconv.TOOLSPAN_LINK_TYPE: "resumes_approval"}
    attrs = dict(resumed.attributes or {})
    assert attrs[semconv.TOOLSPAN_APPROVAL_RESUMES] == f"exec_{waiting.span_id}"
    assert attrs[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED
    decided = resumed.events[1]
    assert decided.timestamp is not None
    assert dict(decided.attributes or {}) == {
        semconv.PERMISSION_DECISION: "deny",
        semconv.PERMISSION_NOTE: "freeze",
        semconv.PERMISSION_DECIDED_BY: "cab",
        semconv.PERMISSION_LATENCY_MS: (decided.timestamp - waiting.required_ns) // 1_000_000,
    }


def test_a_call_without_a_model_id_is_denied_with_the_reason(tmp_path: Path, spans: Any) -> None:
    book = toolspan.ApprovalBook(tmp_path / "book.db")
    gemini = {"function_call": {"name": "deploy", "args": {"env": "prod"}}}
    (result,) = toolspan.run_tool_calls([gemini], [deploy], approve=book)
    assert result["function_response"]["response"] == {
        "error": "PermissionDenied: approval failed: ValueError: "
        "the approval book needs the model's tool call id; the call of 'deploy' has none"
    }
    assert book.waiting() == []


def test_bad_decisions_get_precise_errors_and_change_nothing(tmp_path: Path) -> None:
    book = toolspan.ApprovalBook(tmp_path / "book.db")
    with pytest.raises(KeyError, match="no tool call 'nope' waits in the approval book"):
        book.decide("nope", "allow")
    with pytest.raises(ValueError, match=re.escape(f"decision must be {choices(bools=True)}, got 'maybe'")):
        book.decide("nope", "maybe")
    with pytest.raises(ValueError, match="arguments must be a mapping, got list"):
        book.decide("nope", "allow", arguments=["x"])  # type: ignore[arg-type]
    for bad in (0, -1, "5", True):
        with pytest.raises(ValueError, match="poll_interval must be a positive number of seconds, got "):
            toolspan.ApprovalBook(tmp_path / "book.db", poll_interval=bad)  # type: ignore[arg-type]


def test_a_call_is_decided_once(tmp_path: Path, spans: Any) -> None:
    book = toolspan.ApprovalBook(tmp_path / "book.db")
    toolspan.run_tool_calls([CALL], [deploy], approve=book, approve_timeout=0.05)
    book.decide("toolu_9", "allow", by="alice")
    with pytest.raises(ValueError, match="tool call 'toolu_9' was already decided: allow by alice"):
        book.decide("toolu_9", "deny", by="bob")
    assert toolspan.run_tool_calls([CALL], [deploy], approve=book)[0]["content"] == '"deployed prod"'
    book.forget("toolu_9")
    with pytest.raises(KeyError, match="no tool call 'toolu_9' in the approval book"):
        book.forget("toolu_9")
    with pytest.raises(KeyError, match="no tool call 'toolu_9' waits in the approval book"):
        book.decide("toolu_9", "allow")


def test_a_call_that_stops_waiting_stops_polling_the_book(tmp_path: Path, spans: Any) -> None:
    def pollers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "toolspan-approve"]

    book = toolspan.ApprovalBook(tmp_path / "book.db", poll_interval=0.01)
    toolspan.run_tool_calls([CALL], [deploy], approve=book, approve_timeout=0.05)
    deadline = time.monotonic() + 30
    while pollers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pollers() == []
    assert [w.call_id for w in book.waiting()] == ["toolu_9"]  # still booked for when the call comes again
