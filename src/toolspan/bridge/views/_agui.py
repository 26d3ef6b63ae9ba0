"""AG-UI events: the runs of a conversation as the Agent-User Interaction Protocol's event stream.

``to_ag_ui(spans)`` gives the events of every run (see ``_runs``) in order; each is the JSON object an AG-UI
client reads (camelCase keys, ``type`` in capitals, ``timestamp`` in ms since the epoch):

- ``RUN_STARTED`` ``{threadId, runId}`` (thread = the conversation, run = the turn) opens each run;
- the user's message: ``TEXT_MESSAGE_START`` (``role: "user"``) / ``TEXT_MESSAGE_CONTENT`` /
  ``TEXT_MESSAGE_END``; a model call's output and the run's answer the same with ``role: "assistant"``
  (message id ``msg-<span id>``, the id live text deltas of that span use too);
- a thought: ``REASONING_START`` / ``REASONING_MESSAGE_START`` / ``REASONING_MESSAGE_CONTENT`` /
  ``REASONING_MESSAGE_END`` / ``REASONING_END``;
- a sub-agent or plan: ``STEP_STARTED`` / ``STEP_FINISHED`` ``{stepName}`` (the name, with `` [<span id>]``
  when a step of that name is already open);
- a tool call: ``TOOL_CALL_START`` ``{toolCallId, toolCallName, parentMessageId}`` (the model's call id;
  the parent is the message of the model call that asked for it), ``TOOL_CALL_ARGS`` ``{delta}`` (the
  arguments as one JSON text), ``TOOL_CALL_END``; its outcome ``TOOL_CALL_RESULT`` ``{messageId,
  toolCallId, content, role: "tool"}`` (content: the result text, or JSON text of a structured result; the
  error text of a call that did not complete) with ``metadata.toolspan`` ``{state, isError,
  executionId}``;
- approvals: ``CUSTOM`` ``{name: "toolspan.approval", value: {toolCallId, decision, note, by, latencyMs,
  arguments}}`` (``decision`` null while asked): AG-UI has no event for them. An allowing decision that
  replaced the model's arguments carries them as ``arguments`` (what the body received) and ``edited: {by,
  at (ms), modelInput}`` (who decided, when, the model's own arguments, which ``TOOL_CALL_ARGS`` sent);
- the run's end: ``RUN_FINISHED`` (``result``: the answer), with ``outcome`` ``{type: "interrupt",
  interrupts: [{id, reason: "tool_approval", toolCallId}]}`` when the run stopped waiting for approvals;
  ``RUN_ERROR`` ``{message, code}`` when it failed (code ``error``) or was interrupted (``interrupted``).

``messages_snapshot(events)`` folds events into the messages an AG-UI client holds: the
``MESSAGES_SNAPSHOT`` event a client joining late starts from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

from toolspan.bridge.model import Span
from toolspan.bridge.views._common import ms
from toolspan.bridge.views._runs import Item, Run, to_runs

__all__ = ["ag_ui_run_events", "messages_snapshot", "to_ag_ui"]

APPROVAL_EVENT: Final = "toolspan.approval"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _message(kind: str, message_id: str, role: str, text: str, t: int) -> list[dict[str, Any]]:
    prefix = "REASONING_MESSAGE" if kind == "reasoning" else "TEXT_MESSAGE"
    start: dict[str, Any] = {"type": f"{prefix}_START", "timestamp": t, "messageId": message_id, "role": role}
    out = [start]
    if text:
        out.append({"type": f"{prefix}_CONTENT", "timestamp": t, "messageId": message_id, "delta": text})
    out.append({"type": f"{prefix}_END", "timestamp": t, "messageId": message_id})
    return out


def _tool_events(kind: str, data: dict[str, Any], t: int) -> list[dict[str, Any]]:
    """A tool call's start (with its arguments), approval or result; nothing for other items (``llm_open``:
    a marker for live streams only)."""
    if kind == "tool_start":
        start: dict[str, Any] = {
            "type": "TOOL_CALL_START",
            "timestamp": t,
            "toolCallId": data["call_id"],
            "toolCallName": data["name"],
        }
        if data["parent"] is not None:
            start["parentMessageId"] = data["parent"]
        args = {} if data["input"] is None else data["input"]
        return [
            start,
            {"type": "TOOL_CALL_ARGS", "timestamp": t, "toolCallId": data["call_id"], "delta": _text(args)},
            {"type": "TOOL_CALL_END", "timestamp": t, "toolCallId": data["call_id"]},
        ]
    if kind == "approval":
        value = {
            "toolCallId": data["call_id"],
            "decision": data["decision"],
            "note": data["note"],
            "by": data["by"],
            "latencyMs": data["latency_ms"],
            "arguments": data["arguments"],
        }
        edited = data.get("edited")
        if edited is not None:
            value["edited"] = {"by": edited["by"], "at": edited["at"], "modelInput": edited["model_input"]}
        return [{"type": "CUSTOM", "timestamp": t, "name": APPROVAL_EVENT, "value": value}]
    if kind == "tool_end":
        error = data["error"]
        content = _text(data["output"]) if error is None else error
        meta = {"state": data["state"], "isError": error is not None, "executionId": data["execution_id"]}
        return [
            {
                "type": "TOOL_CALL_RESULT",
                "timestamp": t,
                "messageId": data["message_id"],
                "toolCallId": data["call_id"],
                "content": "" if content is None else content,
                "role": "tool",
                "metadata": {"toolspan": meta},
            }
        ]
    return []


def _item_events(item: Item, steps: dict[str, str], open_steps: set[str]) -> list[dict[str, Any]]:
    t = ms(item.time_ns)
    data = item.data
    kind = item.kind
    if kind == "user":
        return _message("text", data["id"], "user", data["text"], t)
    if kind == "text":
        return _message("text", data["id"], "assistant", data["text"], t)
    if kind == "thought":
        return [
            {"type": "REASONING_START", "timestamp": t, "messageId": data["id"]},
            *_message("reasoning", data["id"], "reasoning", data["text"], t),
            {"type": "REASONING_END", "timestamp": t, "messageId": data["id"]},
        ]
    if kind == "step_start":
        name = data["name"]
        if name in open_steps:
            name = f"{name} [{data['span_id']}]"
        steps[data["span_id"]] = name
        open_steps.add(name)
        return [{"type": "STEP_STARTED", "timestamp": t, "stepName": name}]
    if kind == "step_end":
        name = steps.pop(data["span_id"], data["name"])
        open_steps.discard(name)
        return [{"type": "STEP_FINISHED", "timestamp": t, "stepName": name}]
    return _tool_events(kind, data, t)


def _run_end(run: Run) -> dict[str, Any]:
    t = ms(run.end_ns)
    if run.status in ("error", "interrupted"):
        message = run.error or (
            "The run failed" if run.status == "error" else "The run was interrupted before it ended"
        )
        code = "error" if run.status == "error" else "interrupted"
        return {"type": "RUN_ERROR", "timestamp": t, "message": message, "code": code}
    event: dict[str, Any] = {
        "type": "RUN_FINISHED",
        "timestamp": t,
        "threadId": run.thread_id,
        "runId": run.run_id,
    }
    if run.answer is not None:
        event["result"] = run.answer
    if run.status == "waiting":
        interrupts = [
            {"id": f"approval-{call}", "reason": "tool_approval", "toolCallId": call} for call in run.waiting
        ]
        event["outcome"] = {"type": "interrupt", "interrupts": interrupts}
    return event


def ag_ui_run_events(run: Run) -> list[tuple[dict[str, Any], Item | None]]:
    """The events of one run, each with the run item it came from (``None``: the run's start and end)."""
    start = {
        "type": "RUN_STARTED",
        "timestamp": ms(run.start_ns),
        "threadId": run.thread_id,
        "runId": run.run_id,
    }
    out: list[tuple[dict[str, Any], Item | None]] = [(start, None)]
    steps: dict[str, str] = {}
    open_steps: set[str] = set()
    for item in run.items:
        out.extend((event, item) for event in _item_events(item, steps, open_steps))
    # A step that never ended closes with its run (a provisional item already did, unless it is missing).
    out.append((_run_end(run), None))
    return out


def to_ag_ui(spans: Iterable[Span]) -> list[dict[str, Any]]:
    """The AG-UI events of every run of the given traces (see module doc)."""
    return [event for run in to_runs(spans) for event, _item in ag_ui_run_events(run)]


def messages_snapshot(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages an AG-UI client holds after ``events``, in its order: user, assistant (text and tool
    calls), tool and reasoning messages."""
    messages: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    calls: dict[str, dict[str, Any]] = {}

    def assistant(message_id: str) -> dict[str, Any]:
        found = by_id.get(message_id)
        if found is None or found["role"] != "assistant":
            found = {"id": message_id, "role": "assistant"}
            messages.append(found)
            by_id[message_id] = found
        return found

    for event in events:
        kind = event["type"]
        if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            message_id = event["messageId"]
            if message_id not in by_id:
                message = {"id": message_id, "role": event.get("role", "assistant"), "content": ""}
                messages.append(message)
                by_id[message_id] = message
        elif kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            target = by_id.get(event["messageId"])
            if target is not None:
                target["content"] = target.get("content", "") + event["delta"]
        elif kind == "TOOL_CALL_START":
            owner = assistant(event.get("parentMessageId") or event["toolCallId"])
            call = {
                "id": event["toolCallId"],
                "type": "function",
                "function": {"name": event["toolCallName"], "arguments": ""},
            }
            owner.setdefault("toolCalls", []).append(call)
            calls[event["toolCallId"]] = call
        elif kind == "TOOL_CALL_ARGS":
            found = calls.get(event["toolCallId"])
            if found is not None:
                found["function"]["arguments"] += event["delta"]
        elif kind == "TOOL_CALL_RESULT":
            tool = {
                "id": event["messageId"],
                "role": "tool",
                "toolCallId": event["toolCallId"],
                "content": event["content"],
            }
            meta = event.get("metadata", {}).get("toolspan", {})
            if meta.get("isError"):
                tool["error"] = event["content"]
            messages.append(tool)
            by_id[tool["id"]] = tool
    return messages
