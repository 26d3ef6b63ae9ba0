"""The Vercel AI SDK UI message stream (protocol v1): each run as one assistant message's chunks.

``to_ai_sdk(spans)`` gives the chunks of every run (see ``_runs``) in order; over HTTP each is one
``data: <chunk JSON>`` server-sent event, the stream ends with ``data: [DONE]`` and the response carries
``x-vercel-ai-ui-message-stream: v1``. Per run:

- ``start`` ``{messageId: "msg-<run id>", messageMetadata: {threadId, runId, traceId, userMessage}}``
  (the UI stream carries assistant messages only: the user's text rides in the metadata);
- a thought: ``reasoning-start`` / ``reasoning-delta`` / ``reasoning-end``;
- a model call's output and the run's answer: ``text-start`` / ``text-delta`` / ``text-end`` (id
  ``msg-<span id>``, the id live text deltas of that span use too);
- a tool call: ``tool-input-start`` and ``tool-input-available`` ``{toolCallId, toolName, input, dynamic:
  true}`` (a dynamic tool: the frontend need not know toolspan's tools); an approval asked:
  ``tool-approval-request`` ``{approvalId, toolCallId}``; an allowing decision that replaced the model's
  arguments sends ``tool-input-available`` again with ``input`` the arguments the body received and
  ``providerMetadata: {toolspan: {edited: {by, at (ms), modelInput}}}`` (who decided, when, the model's own
  arguments); the outcome: ``tool-output-available``
  ``{output}`` (the result as recorded, any JSON), ``tool-output-error`` ``{errorText}`` (failed,
  cancelled or never finished) or ``tool-output-denied``;
- the run's end: ``finish`` ``{finishReason: "stop"}``; a failed run sends ``error`` ``{errorText}`` then
  ``finish`` ``{finishReason: "error"}``; a run that stopped waiting for an approval ``finish``
  ``{finishReason: "other"}``; a run that never ended otherwise ``abort`` ``{reason}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.model import Span
from toolspan.bridge.views._runs import Item, Run, to_runs

__all__ = ["AI_SDK_HEADER", "ai_sdk_run_chunks", "to_ai_sdk"]

# The response header that marks a UI message stream, and its protocol version.
AI_SDK_HEADER: Final = ("x-vercel-ai-ui-message-stream", "v1")


def _text_chunks(prefix: str, part_id: str, text: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": f"{prefix}-start", "id": part_id}]
    if text:
        out.append({"type": f"{prefix}-delta", "id": part_id, "delta": text})
    out.append({"type": f"{prefix}-end", "id": part_id})
    return out


def _item_chunks(item: Item) -> list[dict[str, Any]]:
    data = item.data
    kind = item.kind
    if kind == "text":
        return _text_chunks("text", data["id"], data["text"])
    if kind == "thought":
        return _text_chunks("reasoning", data["id"], data["text"])
    if kind == "tool_start":
        call = {"toolCallId": data["call_id"], "toolName": data["name"]}
        args = {} if data["input"] is None else data["input"]
        return [
            {"type": "tool-input-start", **call, "dynamic": True},
            {"type": "tool-input-available", **call, "input": args, "dynamic": True},
        ]
    if kind == "approval" and data["decision"] is None:
        approval_id = f"approval-{data['call_id']}-{item.sub}"
        return [{"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": data["call_id"]}]
    if kind == "approval" and data.get("edited") is not None:
        # The body received other arguments than the model's: the part's input becomes them, marked.
        edited = data["edited"]
        mark = {"by": edited["by"], "at": edited["at"], "modelInput": edited["model_input"]}
        return [
            {
                "type": "tool-input-available",
                "toolCallId": data["call_id"],
                "toolName": data["name"],
                "input": data["arguments"],
                "dynamic": True,
                "providerMetadata": {"toolspan": {"edited": mark}},
            }
        ]
    if kind == "tool_end":
        if data["state"] == sc.STATE_DENIED:
            return [{"type": "tool-output-denied", "toolCallId": data["call_id"]}]
        if data["error"] is not None:
            return [
                {
                    "type": "tool-output-error",
                    "toolCallId": data["call_id"],
                    "errorText": data["error"],
                    "dynamic": True,
                }
            ]
        return [
            {
                "type": "tool-output-available",
                "toolCallId": data["call_id"],
                "output": data["output"],
                "dynamic": True,
            }
        ]
    return []


def _run_end(run: Run) -> list[dict[str, Any]]:
    if run.status == "error":
        return [
            {"type": "error", "errorText": run.error or "The run failed"},
            {"type": "finish", "finishReason": "error"},
        ]
    if run.status == "waiting":
        return [{"type": "finish", "finishReason": "other"}]
    if run.status == "interrupted":
        return [{"type": "abort", "reason": "the run was interrupted before it ended"}]
    return [{"type": "finish", "finishReason": "stop"}]


def ai_sdk_run_chunks(run: Run) -> list[tuple[dict[str, Any], Item | None]]:
    """The chunks of one run, each with the run item it came from (``None``: the run's start and end)."""
    user = next((it.data["text"] for it in run.items if it.kind == "user"), None)
    meta = {"threadId": run.thread_id, "runId": run.run_id, "traceId": run.trace_id, "userMessage": user}
    out: list[tuple[dict[str, Any], Item | None]] = [
        ({"type": "start", "messageId": f"msg-{run.run_id}", "messageMetadata": meta}, None)
    ]
    for item in run.items:
        out.extend((chunk, item) for chunk in _item_chunks(item))
    out.extend((chunk, None) for chunk in _run_end(run))
    return out


def to_ai_sdk(spans: Iterable[Span]) -> list[dict[str, Any]]:
    """The UI message stream chunks of every run of the given traces (see module doc)."""
    return [chunk for run in to_runs(spans) for chunk, _item in ai_sdk_run_chunks(run)]
