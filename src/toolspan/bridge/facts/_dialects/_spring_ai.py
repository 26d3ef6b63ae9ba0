"""Spring AI's own tracing (Micrometer Observations bridged to OpenTelemetry), marked by ``spring.ai.kind``.

- ``tool_call`` (``execute_tool {name}``, GenAI's ``execute_tool`` operation) is a tool call, its facts
  under Spring AI's own names: ``spring.ai.tool.definition.name``, ``spring.ai.tool.call.id`` (the model's
  id), and with ``spring.ai.tools.observations.include-content`` its arguments and result
  (``spring.ai.tool.call.arguments``, ``.result``). A failing tool, when Spring AI lets its exception out
  (``spring.ai.tools.throw-exception-on-error``), ends its span with an ``exception`` event.
- ``chat_client`` (``spring_ai chat_client``) is the agent: the ChatClient call whose tool-calling advisor
  runs the model and the tools. Its advisors (``advisor``) are neither.
- The model call is GenAI's ``chat`` span, with the model, usage and finish reasons, but none of the model's
  messages: Spring AI only logs them. It names the tools the model was offered
  (``spring.ai.model.request.tool.names``); whatever it asked for is known from the tool spans alone, each
  with the model's id. ``asks_unrecorded_calls`` says which model calls asked for tools that way: a tool
  call is then requested by the latest of them before it (``toolspan.bridge.link``).
"""

from __future__ import annotations

from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, tool_attributes
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, TOOL
from toolspan.bridge.model import Span

__all__ = ["SPRING_AI"]


def _kind(span: Span) -> str | None:
    kind = span.attributes.get(sc.SPRING_AI_KIND)
    if kind == sc.SPRING_AI_KIND_TOOL_CALL:
        return TOOL
    if kind == sc.SPRING_AI_KIND_CHAT_CLIENT:
        return AGENT
    return None


def _read(span: Span) -> dict[str, Any]:
    attrs = span.attributes
    if attrs.get(sc.SPRING_AI_KIND) != sc.SPRING_AI_KIND_TOOL_CALL:
        return {}
    return tool_attributes(
        attrs.get(sc.SPRING_AI_TOOL_NAME),
        attrs.get(sc.SPRING_AI_TOOL_CALL_ARGUMENTS),
        attrs.get(sc.SPRING_AI_TOOL_CALL_RESULT),
        attrs.get(sc.SPRING_AI_TOOL_CALL_ID),
    )


def _asks_unrecorded_calls(span: Span) -> bool:
    """Whether model call ``span`` is Spring AI's and stopped to call tools it does not record."""
    attrs = span.attributes
    if sc.SPRING_AI_MODEL_TOOL_NAMES not in attrs:
        return False
    reasons = parse_json(attrs.get(sc.GEN_AI_RESPONSE_FINISH_REASONS))
    if isinstance(reasons, str):
        reasons = [reasons]
    return isinstance(reasons, (list, tuple)) and any(
        isinstance(r, str) and r.lower() == sc.SPRING_AI_FINISH_TOOL_CALLS for r in reasons
    )


SPRING_AI = Dialect(
    precedence=80,
    name="Spring AI",
    markers=(sc.SPRING_AI_KIND,),
    kind=_kind,
    read=_read,
    asks_unrecorded_calls=_asks_unrecorded_calls,
    index_keys=frozenset({sc.SPRING_AI_KIND, sc.SPRING_AI_TOOL_NAME}),
)
