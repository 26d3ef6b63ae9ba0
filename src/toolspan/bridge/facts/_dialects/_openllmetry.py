"""OpenLLMetry (Traceloop's instrumentors), marked by ``traceloop.span.kind``: tool / agent / workflow /
task (the last two a chain).

Its keys: ``traceloop.entity.name`` (a tool's or an agent's name), ``traceloop.entity.input`` /
``.output`` (a call recorded as ``{"args": [...], "kwargs": {...}}``, a result, a chain's output), and the
tool calls a model asked for in ``gen_ai.completion.<i>.tool_calls.<j>.{id,name,arguments}``.

Its MCP instrumentation (``opentelemetry-instrumentation-mcp``, the scope
``opentelemetry.instrumentation.mcp``) records both sides of an MCP call: the client's ``{name}.tool`` span
(input ``{"tool_name", "arguments"}``, output ``{"result", "is_error"}``, the result the first content
block's text) and the server's ``{name}.tool`` span (output ``[{"type": "text", "content": ...}]``). Each
is a transport record (``transport_record``): a leg of the call a tool span of the same tool above it made
(the OpenAI Agents SDK's), the call itself alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, Requested, dispatched_call_id, flattened_calls
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, CHAIN, TOOL
from toolspan.bridge.model import Span

__all__ = ["OPENLLMETRY"]

_KINDS: Final[Mapping[str, str]] = {
    sc.TRACELOOP_KIND_TOOL: TOOL,
    sc.TRACELOOP_KIND_AGENT: AGENT,
    sc.TRACELOOP_KIND_WORKFLOW: CHAIN,
    sc.TRACELOOP_KIND_TASK: CHAIN,
}
_CALL: Final = re.compile(re.escape(sc.TRACELOOP_COMPLETION_PREFIX) + r"(\d+)\.tool_calls\.(\d+)\.(.+)")


def _kind(span: Span) -> str | None:
    kind = span.attributes.get(sc.TRACELOOP_SPAN_KIND)
    return _KINDS.get(kind.lower()) if isinstance(kind, str) else None


def _tool_input(attrs: Mapping[str, Any]) -> Any:
    """The call's arguments: ``{"args": [...], "kwargs": {...}}``, keyword-only calls as the kwargs."""
    value = attrs.get(sc.TRACELOOP_ENTITY_INPUT)
    if value is None:
        return None
    value = parse_json(value)
    # Its MCP instrumentation records a call as {"tool_name": ..., "arguments": {...}}.
    if (
        isinstance(value, dict)
        and value.keys() == {"tool_name", "arguments"}
        and isinstance(value["arguments"], dict)
    ):
        return value["arguments"]
    if isinstance(value, dict) and value and value.keys() <= {"args", "kwargs"}:
        args = value.get("args")
        kwargs = value.get("kwargs")
        if not args and isinstance(kwargs, dict):
            return kwargs
    return value


def _transport_record(span: Span) -> bool:
    return span.scope.startswith(sc.TRACELOOP_MCP_SCOPE)


def _tool_output(span: Span, value: Any) -> Any:
    """The MCP client's result: ``{"result": "<the first content block's text>", "is_error": true}``."""
    if (
        _transport_record(span)
        and sc.TRACELOOP_ENTITY_OUTPUT in span.attributes
        and isinstance(value, dict)
        and "result" in value
        and value.keys() <= {"result", "is_error"}
    ):
        return parse_json(value["result"])
    return value


def _results(value: Any) -> Any:
    """The MCP server's result: ``[{"type": "text", "content": ...}]`` (``None``: no such list)."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], Mapping):
        block = value[0]
        if set(block) == {"type", "content"} and block.get("type") == "text":
            return block["content"]
    return None


def _requests(attrs: Mapping[str, Any]) -> list[Requested]:
    return flattened_calls(attrs, _CALL, "name", "arguments")


def _dispatched_id(attrs: Mapping[str, Any]) -> str | None:
    return dispatched_call_id(attrs, sc.TRACELOOP_ENTITY_INPUT)


OPENLLMETRY = Dialect(
    precedence=20,
    name="OpenLLMetry",
    markers=(sc.TRACELOOP_SPAN_KIND,),
    kind=_kind,
    index_keys=frozenset({sc.TRACELOOP_SPAN_KIND, sc.TRACELOOP_ENTITY_NAME}),
    tool_name_keys=(sc.TRACELOOP_ENTITY_NAME,),
    tool_output_keys=(sc.TRACELOOP_ENTITY_OUTPUT,),
    agent_name_keys=(sc.TRACELOOP_ENTITY_NAME,),
    agent_input_keys=(sc.TRACELOOP_ENTITY_INPUT,),
    agent_output_keys=(sc.TRACELOOP_ENTITY_OUTPUT,),
    output_keys=(sc.TRACELOOP_ENTITY_OUTPUT,),
    tool_input_of=_tool_input,
    dispatched_id_of=_dispatched_id,
    requests_of=_requests,
    transport_record=_transport_record,
    tool_output_of=_tool_output,
    results_of=_results,
)
