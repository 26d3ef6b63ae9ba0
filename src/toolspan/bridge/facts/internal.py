"""The facts' internal names: what toolspan's own packages read of this package beyond its public facade
(``docs/bridge.md``), re-exported by ``toolspan.bridge.internal``, their one door. Not public API."""

from __future__ import annotations

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
    unwrapped_result,
)
from toolspan.bridge.facts._tools import (
    ACT_AWAITING_APPROVAL,
    act_status,
    arguments_text,
    edited_input,
    is_cancellation,
    parent_tool_ids,
)

__all__ = [
    "ACT_AWAITING_APPROVAL",
    "CONVERSATION_KEYS",
    "INDEX_KEYS",
    "act_status",
    "agent_input_text",
    "agent_output_text",
    "arguments_text",
    "asks_unrecorded_calls",
    "calls_model",
    "completed",
    "content_attributes",
    "dispatched_id",
    "earlier_requests",
    "edited_input",
    "is_cancellation",
    "is_event_record",
    "is_transport_record",
    "normal_arguments",
    "normal_result",
    "parent_tool_ids",
    "result_call_id",
    "sent_responses",
    "total_usage",
    "unwrapped_result",
]
