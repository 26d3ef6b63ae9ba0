"""Google ADK's own tracer. Its legacy ``call_llm`` span (with ``gcp.vertex.agent.llm_response``, the
model's response) is a model call; its content: ``gcp.vertex.agent.llm_request`` / ``.llm_response`` (a
Gemini request and response), ``.tool_call_args`` / ``.tool_response`` (a tool's arguments and result; on
its failure path ``<not specified>``, read as absent). Its ``execute_tool (merged)`` span, whose tool is
``(merged tools)``, runs no tool (each call has its own span): ``other``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.facts._kinds import LLM
from toolspan.bridge.model import Span

__all__ = ["GOOGLE_ADK"]


def _kind(span: Span) -> str | None:
    return LLM if sc.ADK_LLM_RESPONSE in span.attributes else None


def _merged(attrs: Mapping[str, Any]) -> bool:
    # ADK's record of merged parallel responses, for its web UI: every call has its own span.
    return attrs.get(sc.GEN_AI_TOOL_NAME) == sc.ADK_MERGED_TOOLS


GOOGLE_ADK = Dialect(
    name="Google ADK",
    markers=(sc.ADK_LLM_RESPONSE,),
    kind=_kind,
    recognised=True,
    other=_merged,
    absent_values=frozenset({sc.ADK_NOT_SPECIFIED}),
    index_keys=frozenset({sc.ADK_LLM_RESPONSE, sc.GEN_AI_TOOL_NAME}),
    tool_input_keys=(sc.ADK_TOOL_CALL_ARGS,),
    tool_output_keys=(sc.ADK_TOOL_RESPONSE,),
    agent_input_keys=(sc.ADK_LLM_REQUEST,),
    agent_output_keys=(sc.ADK_LLM_RESPONSE,),
    request_keys=(sc.ADK_LLM_RESPONSE,),
)
