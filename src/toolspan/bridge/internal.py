"""The bridge's internal names: what toolspan's own views, server, CLI, exporters, backends and replay reach
beyond the public facades (``toolspan.bridge.readers`` and ``toolspan.bridge.facts``, each exactly what
``docs/bridge.md`` documents). Not public API: these names change without notice.

An import contract (``pyproject.toml``) lets only those packages import this module. It imports no other
package's private module: the readers and the facts each name what they give it in their own ``internal``
module. The views' own internal names are
``toolspan.bridge.views.internal`` (the views import this module, so it cannot hold theirs).
"""

from __future__ import annotations

from toolspan.bridge._json_write import finite, nonfinite_text
from toolspan.bridge.facts.internal import (
    ACT_AWAITING_APPROVAL,
    CONVERSATION_KEYS,
    INDEX_KEYS,
    act_status,
    agent_input_text,
    agent_output_text,
    arguments_text,
    asks_unrecorded_calls,
    calls_model,
    completed,
    content_attributes,
    dispatched_id,
    earlier_requests,
    edited_input,
    is_cancellation,
    is_event_record,
    is_transport_record,
    normal_arguments,
    normal_result,
    parent_tool_ids,
    result_call_id,
    sent_responses,
    total_usage,
    unwrapped_result,
)
from toolspan.bridge.readers.internal import (
    ZERO_SPAN,
    ZERO_TRACE,
    Ctx,
    LogRecord,
    attach_logs,
    bad_times,
    describe,
    is_logs_document,
    logs_from_bytes,
    logs_from_json,
    logs_from_proto,
    parse_trace_request,
    proto_attributes,
    proto_resource_attributes,
    proto_span,
    resolve_inputs,
)

__all__ = [
    "dispatched_id",
    "ACT_AWAITING_APPROVAL",
    "CONVERSATION_KEYS",
    "INDEX_KEYS",
    "ZERO_SPAN",
    "ZERO_TRACE",
    "Ctx",
    "LogRecord",
    "act_status",
    "agent_input_text",
    "agent_output_text",
    "arguments_text",
    "asks_unrecorded_calls",
    "attach_logs",
    "bad_times",
    "calls_model",
    "completed",
    "content_attributes",
    "describe",
    "earlier_requests",
    "edited_input",
    "finite",
    "is_cancellation",
    "is_event_record",
    "is_logs_document",
    "is_transport_record",
    "logs_from_bytes",
    "logs_from_json",
    "logs_from_proto",
    "nonfinite_text",
    "normal_arguments",
    "normal_result",
    "parent_tool_ids",
    "parse_trace_request",
    "proto_attributes",
    "proto_resource_attributes",
    "proto_span",
    "resolve_inputs",
    "result_call_id",
    "sent_responses",
    "total_usage",
    "unwrapped_result",
]
