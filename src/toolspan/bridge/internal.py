"""The bridge's internal names: what toolspan's own views, server, CLI, exporters, backends and replay reach
beyond the public facades (``toolspan.bridge.readers`` and ``toolspan.bridge.facts``, each exactly what
``docs/bridge.md`` documents). Not public API: these names change without notice.

An import contract (``pyproject.toml``) lets only those packages import this module; it is the one module
outside the readers and the facts that imports their private modules. The views' own internal names are
``toolspan.bridge.views.internal`` (the views import this module, so it cannot hold theirs).
"""

from __future__ import annotations

from toolspan.bridge._json_write import finite, nonfinite_text
from toolspan.bridge.facts._agents import agent_input_text, agent_output_text
from toolspan.bridge.facts._classify import calls_model
from toolspan.bridge.facts._dialects import (
    asks_unrecorded_calls,
    dispatched_id,
    is_event_record,
    is_transport_record,
    sent_responses,
)
from toolspan.bridge.facts._event_content import content_attributes
from toolspan.bridge.facts._index import CONVERSATION_KEYS, INDEX_KEYS
from toolspan.bridge.facts._model_calls import completed, total_usage
from toolspan.bridge.facts._requests import (
    earlier_requests,
    normal_arguments,
    normal_result,
    result_call_id,
)
from toolspan.bridge.facts._tools import (
    ACT_AWAITING_APPROVAL,
    act_status,
    arguments_text,
    edited_input,
    is_cancellation,
    parent_tool_ids,
)
from toolspan.bridge.readers._detect import describe
from toolspan.bridge.readers._logs import (
    LogRecord,
    attach_logs,
    is_logs_document,
    logs_from_bytes,
    logs_from_json,
    logs_from_proto,
)
from toolspan.bridge.readers._otlp_proto import attributes as proto_attributes
from toolspan.bridge.readers._otlp_proto import bad_times
from toolspan.bridge.readers._otlp_proto import parse_request as parse_trace_request
from toolspan.bridge.readers._otlp_proto import resource_attributes as proto_resource_attributes
from toolspan.bridge.readers._otlp_proto import span_of as proto_span
from toolspan.bridge.readers._report import Ctx
from toolspan.bridge.readers._sources import resolve_inputs
from toolspan.bridge.readers._values import ZERO_SPAN, ZERO_TRACE

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
]
