"""One span's facts: recognise tool, agent, plan and LLM spans whatever wrote them, and read out of a span
its tool call, its approvals, its agent, its model call and the tool calls that model call asked for.

Conventions read (first match wins, in this order; each framework's convention is one module of
``_dialects``, a ``Dialect`` record, and its ``precedence`` is its place in this order):

1. toolspan plans: ``toolspan.plan.name`` present -> ``plan``.
2. OTel GenAI: ``gen_ai.operation.name`` = ``execute_tool`` -> ``tool``; ``invoke_agent`` / ``create_agent``
   -> ``agent``; ``chat`` / ``text_completion`` / ``generate_content`` / ``embeddings`` -> ``llm``;
   ``retrieval`` / ``search_memory`` -> ``retriever``; ``invoke_workflow`` / ``plan`` -> ``chain``.
3. The conventions whose tracers state a kind (``Dialect.recognised`` false): OpenInference's
   ``openinference.span.kind`` TOOL / AGENT / LLM / EMBEDDING / CHAIN / RETRIEVER; OpenLLMetry's
   ``traceloop.span.kind`` tool / agent / workflow / task (the last two -> ``chain``); the Vercel AI SDK's
   ``ai.operationId``, MLflow's ``mlflow.spanType``, Logfire's ``logfire.msg_template``, Langfuse's
   ``langfuse.observation.type`` (whose own attributes are read as GenAI ones).
4. Older GenAI spans with only ``gen_ai.tool.name``, or a span named ``execute_tool {name}`` -> ``tool``.
5. The conventions recognised by names or content (``docs/frameworks.md``): Haystack's
   ``haystack.agent.run`` / ``.step.llm`` / ``.step.tool`` -> ``agent`` / ``llm`` / ``tool``; Google ADK's
   legacy ``call_llm`` (with ``gcp.vertex.agent.llm_response``) -> ``llm``.

A span a convention says records no call (``Dialect.other``: ADK's ``execute_tool (merged)`` span, named
``(merged tools)``; each call has its own span) is ``other`` before all of these. A model call recorded
inside another (ADK's ``generate_content`` under its ``call_llm``) is counted once, by the outer one (the
views' ``TraceIndex``).

A kind stated by a tracer (2-4) is the span's kind, never re-guessed from its name or place in the tree. An
``llm`` span that calls no model (``calls_model``: LlamaIndex's ``…_prepare_chat_with_tools``, which only
builds the request) keeps its kind; the views count no model call for it.

Everything else is ``other``. MCP transport spans (``POST /mcp/tools/call`` in the Jaeger agent fixture) carry
no tool attributes: they are the HTTP leg of the ``execute_tool`` span above them, so they stay ``other``
(counting them as tool calls would report every MCP call twice).

Ids follow the instrumentation contract whatever wrote the span: ``execution_id`` = ``exec_`` + span id;
``call_id`` = the model's id (``gen_ai.tool.call.id``, else a convention's: OpenInference ``tool_call.id`` or
``tool.id``), else ``toolspan.tool_call_id``, else ``call_`` + span id.

This package is the bridge's reading of one span, whatever wrote it; its modules: ``_kinds`` (the kinds),
``_classify`` (roles), ``_dialects`` (one module per framework convention; ``DIALECTS``, all of them, found,
in the precedence each states), ``_index`` (``INDEX_KEYS``: what a store keeps to index a span unread),
``_event_content`` (content recorded as span events or joined logs), ``_tools`` (tool calls, approvals),
``_agents`` (agents, plans, messages), ``_model_calls`` (a model call's model, usage and finish reason),
``_requests`` (the tool calls a model call asked for), ``_json`` and ``_pyliteral`` (JSON, and Python
literals, held as text).
"""

from __future__ import annotations

from toolspan.bridge.facts._agents import agent_name, plan_name, thoughts
from toolspan.bridge.facts._classify import classify
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, CHAIN, LLM, OTHER, PLAN, RETRIEVER, TOOL
from toolspan.bridge.facts._model_calls import ModelCall, Usage, model_call
from toolspan.bridge.facts._requests import Requested, requested_calls
from toolspan.bridge.facts._tools import (
    ApprovalEvent,
    ArgumentsEdit,
    ToolCallRecord,
    approvals,
    call_id,
    execution_id,
    tool_call,
    tool_error,
    tool_input,
    tool_name,
    tool_output,
    tool_state,
)

# Exactly what docs/bridge.md documents (its test holds them to it); the facts the views and toolspan's own
# server read beyond these are ``toolspan.bridge.internal``.
__all__ = [
    "AGENT",
    "CHAIN",
    "LLM",
    "OTHER",
    "PLAN",
    "RETRIEVER",
    "TOOL",
    "ApprovalEvent",
    "ArgumentsEdit",
    "ModelCall",
    "Requested",
    "ToolCallRecord",
    "Usage",
    "agent_name",
    "approvals",
    "call_id",
    "classify",
    "execution_id",
    "model_call",
    "parse_json",
    "plan_name",
    "requested_calls",
    "thoughts",
    "tool_call",
    "tool_error",
    "tool_input",
    "tool_name",
    "tool_output",
    "tool_state",
]
