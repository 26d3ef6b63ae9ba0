"""Approvals end to end with real processes: an agent process exporting OTLP (with pending records) to a
real ``toolspan serve``; the wait seen live as AWAITING_APPROVAL on the SSE stream and, in real headless
Chromium, on the trace page; a denied call that shows no running body; an approval that arrives after the
agent was SIGKILLed, matched by tool call id in a second process whose span links to the waiting one."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

import toolspan
from tests.support.paths import APPS
from tests.support.server import Server, SseEvent, running_server, sdk_env, sse_stream, wait_for
from toolspan import semconv
from toolspan.bridge.model import Span, SpanLink
from toolspan.bridge.readers import read_spans

pytestmark = pytest.mark.processes

APP = APPS / "approvals_live_app.py"


def _app(server: Server, workdir: Path, mode: str, name: str) -> subprocess.Popen[bytes]:
    env = {**sdk_env(server, "http/protobuf"), "TOOLSPAN_PENDING_SPANS": "true"}
    return subprocess.Popen([sys.executable, str(APP), str(workdir), mode, name], env=env)


def _until_waiting(events: Iterator[SseEvent]) -> dict[str, Any]:
    """The first event: the gated call's act, already awaiting_approval (it never showed as running)."""
    event = next(events)
    assert event.event == "act", event
    act: dict[str, Any] = event.json()
    assert act["status"] == "awaiting_approval", act
    return act


def _until_observed(events: Iterator[SseEvent], *tools: str) -> list[dict[str, Any]]:
    """The events up to the observes of every tool named (one commit may hold several, in span id order)."""
    out: list[dict[str, Any]] = []
    while not set(tools) <= {d["tool_name"] for d in out if d["type"] == "observe"}:
        out.append(next(events).json())
    return out


def _waiting_acts(server: Server, trace_id: str) -> list[dict[str, Any]]:
    status, _, body = server.request("GET", f"/api/traces/{trace_id}/events")
    if status == 404:  # not there yet
        return []
    assert status == 200, (status, body)
    acts = [json.loads(line) for line in body.splitlines()]
    return [a for a in acts if a["type"] == "act" and a["status"] == "awaiting_approval"]


def _tool_spans(path: Path) -> dict[str, Span]:
    spans, _ = read_spans(path)
    return {s.name: s for s in spans if s.name.startswith("execute_tool ")}


def _decide(tmp_path: Path, decision: dict[str, Any]) -> None:
    """The decision file the app's approver waits for, written whole (renamed into place): the app polls
    for it and must never read it half written."""
    draft = tmp_path / "decision.json.tmp"
    draft.write_text(json.dumps(decision))
    draft.replace(tmp_path / "decision.json")


def test_a_waiting_call_is_awaiting_approval_on_the_stream_and_page_until_allowed(
    tmp_path: Path, browser: Browser
) -> None:
    with running_server(tmp_path) as server:
        stream = sse_stream(server, "/api/stream", comments=True)
        assert next(stream) == SseEvent(None, "comment", "connected")
        events = (e for e in stream if e.event != "comment")
        app = _app(server, tmp_path, "signal", "run")
        context = browser.new_context()
        try:
            waiting = _until_waiting(events)
            assert {k: waiting[k] for k in ("tool_name", "call_id", "tool_input", "status")} == {
                "tool_name": "delete_files",
                "call_id": "toolu_del",
                "tool_input": {"path": "/srv/old"},
                "status": "awaiting_approval",
            }
            page = context.new_page()
            page.goto(f"{server.url}/traces/{waiting['trace_id']}")
            page.wait_for_selector("body[data-ready='1']")
            page.wait_for_selector("#live.on")
            page.locator("#timeline .row", has_text="delete_files").click()
            expect(page.locator("#detail .badge")).to_have_text("AWAITING_APPROVAL")
            expect(page.locator("#detail")).to_contain_text("approval requested")
            assert not (tmp_path / "run-results.json").exists()  # the approver still waits

            decision = {
                "decision": "allow",
                "note": "only the logs",
                "by": "alice",
                "arguments": {"path": "/srv/old/logs"},
            }
            _decide(tmp_path, decision)
            after = _until_observed(events, "delete_files", "list_files")
            body = [d for d in after if d["tool_name"] == "list_files"]
            assert [(d["type"], d.get("status"), d.get("state")) for d in body] == [
                ("act", "running", None),
                ("observe", None, "COMPLETED"),
            ]
            again = [d for d in after if d["execution_id"] == waiting["execution_id"]]
            # the allowed call's act again (running) when its decision reached the server apart from its end
            assert [(d["type"], d.get("status")) for d in again[:-1]] in ([], [("act", "running")])
            final = again[-1]
            assert final["type"] == "observe"
            assert (final["state"], final["observation"]) == (
                "COMPLETED",
                {"deleted": ["/srv/old/logs/a.log"]},
            )
            expect(page.locator("#detail .badge")).to_have_text("COMPLETED", timeout=20_000)
            expect(page.locator("#detail")).to_contain_text("allow by alice after")
            expect(page.locator("#detail")).to_contain_text("only the logs")
            # both argument versions: the edit the body received as the arguments (labelled), the model's too
            expect(page.locator("#detail h4", has_text="Arguments (edited)")).to_have_count(1)
            expect(page.locator("#detail p.edited")).to_contain_text("Edited by alice at +")
            expect(page.locator("#detail .json").first).to_contain_text('"path": "/srv/old/logs"')
            expect(page.locator("#detail .model-args")).to_contain_text('"path": "/srv/old"')
            assert app.wait(60) == 0
        finally:
            context.close()
            app.kill()
            stream.close()
    spans = _tool_spans(tmp_path / "run.jsonl")
    assert json.loads(spans["execute_tool delete_files"].attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS]) == {
        "path": "/srv/old"
    }
    assert json.loads(
        spans["execute_tool delete_files"].attributes[semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS]
    ) == {"path": "/srv/old/logs"}


def test_a_denied_call_shows_no_running_body_on_the_stream(tmp_path: Path) -> None:
    with running_server(tmp_path) as server:
        stream = sse_stream(server, "/api/stream", comments=True)
        assert next(stream) == SseEvent(None, "comment", "connected")
        events = (e for e in stream if e.event != "comment")
        app = _app(server, tmp_path, "signal", "run")
        try:
            waiting = _until_waiting(events)
            _decide(tmp_path, {"decision": "deny", "note": "no", "by": "bob"})
            after = _until_observed(events, "delete_files")
            assert app.wait(60) == 0
        finally:
            app.kill()
        # After the deny: at most the call's act saying denied, then its DENIED observe; no body, no running.
        assert [(d["execution_id"], d["type"], d.get("status")) for d in after[:-1]] in (
            [],
            [(waiting["execution_id"], "act", "denied")],
        )
        assert (after[-1]["state"], after[-1]["observation"]) == (
            "DENIED",
            {"error": "Permission denied: no"},
        )
        trace = waiting["trace_id"]
        lines = [json.loads(line) for line in server.get(f"/api/traces/{trace}/events").splitlines()]
        assert [(d["tool_name"], d["type"], d.get("status")) for d in lines] == [
            ("delete_files", "act", "denied"),
            ("delete_files", "observe", None),
        ]
        assert server.counts() == {"spans": 2, "traces": 1}  # the agent and the denied call: nothing below it
        stream.close()
    assert json.loads((tmp_path / "run-results.json").read_text())[0]["content"] == "PermissionDenied: no"


def test_an_approval_after_a_restart_is_matched_by_call_id_and_links_the_waiting_span(tmp_path: Path) -> None:
    with running_server(tmp_path) as server:
        first = _app(server, tmp_path, "book", "first")
        book = toolspan.ApprovalBook(tmp_path / "approvals.db")
        try:
            (waiting,) = wait_for(book.waiting, "the call in the approval book")
            execution_id = f"exec_{waiting.span_id}"
            # The server holds the waiting span (pending records) as AWAITING_APPROVAL.
            acts = wait_for(lambda: _waiting_acts(server, waiting.trace_id), "the waiting act on the server")
            assert [(a["execution_id"], a["call_id"]) for a in acts] == [(execution_id, "toolu_del")]
        finally:
            first.kill()  # SIGKILL while it waits
        assert first.wait(60) == -9
        assert not (tmp_path / "first-results.json").exists()

        book.decide("toolu_del", "allow", note="logs only", by="alice", arguments={"path": "/srv/old/logs"})
        assert book.waiting() == []
        second = _app(server, tmp_path, "book", "second")
        assert second.wait(60) == 0

    results = json.loads((tmp_path / "second-results.json").read_text())
    assert results == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_del",
            "content": '{"deleted": ["/srv/old/logs/a.log"]}',
            "is_error": False,
        }
    ]
    resumed = _tool_spans(tmp_path / "second.jsonl")["execute_tool delete_files"]
    assert resumed.links == (
        SpanLink(
            waiting.trace_id,
            waiting.span_id,
            {semconv.TOOLSPAN_LINK_TYPE: semconv.LINK_TYPE_RESUMES_APPROVAL},
        ),
    )
    args, result = '{"path": "/srv/old"}', '{"deleted": ["/srv/old/logs/a.log"]}'
    assert dict(resumed.attributes) == {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: "delete_files",
        semconv.GEN_AI_TOOL_TYPE: "function",
        semconv.GEN_AI_TOOL_DESCRIPTION: "Delete the files under a path.",
        semconv.OPENINFERENCE_SPAN_KIND: "TOOL",
        semconv.OI_TOOL_NAME: "delete_files",
        semconv.OI_TOOL_DESCRIPTION: "Delete the files under a path.",
        semconv.GEN_AI_TOOL_CALL_ID: "toolu_del",
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: args,
        semconv.OI_INPUT_VALUE: args,
        semconv.OI_INPUT_MIME_TYPE: "application/json",
        semconv.TOOLSPAN_APPROVAL_RESUMES: execution_id,
        semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS: '{"path": "/srv/old/logs"}',
        semconv.TOOLSPAN_EXECUTION_ID: f"exec_{resumed.span_id}",
        semconv.TOOLSPAN_TOOL_CALL_ID: "toolu_del",
        semconv.TOOLSPAN_TOOL_STATE: semconv.STATE_COMPLETED,
        semconv.GEN_AI_TOOL_CALL_RESULT: result,
        semconv.OI_OUTPUT_VALUE: result,
        semconv.OI_OUTPUT_MIME_TYPE: "application/json",
        # The JSON Schema of its parameters, recorded with the approval request.
        semconv.TOOLSPAN_TOOL_PARAMETERS: '{"additionalProperties":false,'
        '"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}',
    }
    required, decided = resumed.events
    assert (required.name, dict(required.attributes)) == (
        semconv.PERMISSION_REQUIRED_EVENT,
        {semconv.GEN_AI_AGENT_NAME: "approvals-agent"},  # the agent the call runs under
    )
    assert decided.name == semconv.PERMISSION_DECIDED_EVENT
    # The wait runs from the first process's permission_required to this decision.
    assert dict(decided.attributes) == {
        semconv.PERMISSION_DECISION: "allow",
        semconv.PERMISSION_NOTE: "logs only",
        semconv.PERMISSION_DECIDED_BY: "alice",
        semconv.PERMISSION_LATENCY_MS: (decided.time_ns - waiting.required_ns) // 1_000_000,
    }
    assert (resumed.trace_id, resumed.span_id) != (waiting.trace_id, waiting.span_id)
