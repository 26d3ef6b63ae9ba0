"""Recognise tool, agent, plan and LLM spans whatever wrote them, and read a tool call out of a span.

Conventions read (first match wins, in this order):

1. toolspan plans: ``toolspan.plan.name`` present -> ``plan``.
2. OTel GenAI: ``gen_ai.operation.name`` = ``execute_tool`` -> ``tool``; ``invoke_agent`` / ``create_agent``
   -> ``agent``; ``chat`` / ``text_completion`` / ``generate_content`` / ``embeddings`` -> ``llm``;
   ``retrieval`` -> ``retriever``.
3. OpenInference: ``openinference.span.kind`` TOOL / AGENT / LLM / EMBEDDING / CHAIN / RETRIEVER.
4. OpenLLMetry: ``traceloop.span.kind`` tool / agent / workflow / task (the last two -> ``chain``).
5. Older GenAI spans with only ``gen_ai.tool.name``, or a span named ``execute_tool {name}`` -> ``tool``.
6. Frameworks' own tracers (``docs/frameworks.md``): Haystack's ``haystack.agent.run`` / ``.step.llm`` /
   ``.step.tool`` -> ``agent`` / ``llm`` / ``tool``; Google ADK's legacy ``call_llm`` (with
   ``gcp.vertex.agent.llm_response``) -> ``llm``. ADK's ``execute_tool (merged)`` span, named
   ``(merged tools)``, runs no tool (each call has its own span): ``other``. A model call recorded inside
   another (ADK's ``generate_content`` under its ``call_llm``) is counted once, by the outer one (the
   views' ``TraceIndex``).

Everything else is ``other``. MCP transport spans (``POST /mcp/tools/call`` in the Jaeger agent fixture) carry
no tool attributes: they are the HTTP leg of the ``execute_tool`` span above them, so they stay ``other``
(counting them as tool calls would report every MCP call twice).

Ids follow the instrumentation contract whatever wrote the span: ``execution_id`` = ``exec_`` + span id;
``call_id`` = the model's id (``gen_ai.tool.call.id``, OpenInference ``tool_call.id`` or ``tool.id``), else
``toolspan.tool_call_id``, else ``call_`` + span id.

This module is the public face of the bridge's span reading; the code lives in ``_kinds`` (roles),
``_tools`` (tool calls, approvals) and ``_agents`` (agents, plans, messages).
"""

from __future__ import annotations

from toolspan.bridge._agents import (
    agent_input_text,
    agent_name,
    agent_output_text,
    plan_name,
    thoughts,
)
from toolspan.bridge._kinds import (
    AGENT,
    CHAIN,
    LLM,
    OTHER,
    PLAN,
    RETRIEVER,
    TOOL,
    classify,
    parse_json,
)
from toolspan.bridge._tools import (
    ACT_AWAITING_APPROVAL,
    ApprovalEvent,
    ToolCallRecord,
    act_status,
    approvals,
    arguments_text,
    call_id,
    edited_input,
    execution_id,
    is_cancellation,
    parent_tool_ids,
    tool_call,
    tool_error,
    tool_input,
    tool_name,
    tool_output,
    tool_state,
)

__all__ = [
    "ACT_AWAITING_APPROVAL",
    "AGENT",
    "CHAIN",
    "LLM",
    "OTHER",
    "PLAN",
    "RETRIEVER",
    "TOOL",
    "ApprovalEvent",
    "ToolCallRecord",
    "act_status",
    "agent_input_text",
    "agent_name",
    "agent_output_text",
    "approvals",
    "arguments_text",
    "call_id",
    "classify",
    "edited_input",
    "execution_id",
    "is_cancellation",
    "parent_tool_ids",
    "parse_json",
    "plan_name",
    "thoughts",
    "tool_call",
    "tool_error",
    "tool_input",
    "tool_name",
    "tool_output",
    "tool_state",
]
