"""Logfire's OpenAI Agents integration, marked by ``logfire.msg_template``.

``Function: {name}`` a tool (``name``, ``input``, ``output``, ``error``: ``{"message": ...}``), ``Agent run:
{name!r}`` an agent, ``Chat completion with {gen_ai.request.model!r}`` / ``Responses API with ...`` a model
call (``input``, ``output`` messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, tool_attributes
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, LLM, TOOL
from toolspan.bridge.model import Span

__all__ = ["LOGFIRE"]


def _kind(span: Span) -> str | None:
    template = span.attributes.get(sc.LOGFIRE_MSG_TEMPLATE)
    if not isinstance(template, str):
        return None
    if template == sc.LOGFIRE_TOOL_TEMPLATE:
        return TOOL
    if template == sc.LOGFIRE_AGENT_TEMPLATE:
        return AGENT
    if template in sc.LOGFIRE_MODEL_TEMPLATES:
        return LLM
    return None


def _read(span: Span) -> dict[str, Any]:
    attrs = span.attributes
    kind = _kind(span)
    if kind == TOOL:
        return tool_attributes(
            attrs.get(sc.LOGFIRE_NAME), attrs.get(sc.LOGFIRE_INPUT), attrs.get(sc.LOGFIRE_OUTPUT)
        )
    if kind == AGENT:
        return {sc.GEN_AI_AGENT_NAME: attrs.get(sc.LOGFIRE_NAME)}
    if kind != LLM:
        return {}
    return {
        sc.GEN_AI_INPUT_MESSAGES: parse_json(attrs.get(sc.LOGFIRE_INPUT)),
        sc.GEN_AI_OUTPUT_MESSAGES: parse_json(attrs.get(sc.LOGFIRE_OUTPUT, attrs.get(sc.LOGFIRE_RESPONSE))),
    }


def _error(span: Span) -> str | None:
    """A tool's ``error`` attribute: ``{"message": ...}`` or a text."""
    if span.attributes.get(sc.LOGFIRE_MSG_TEMPLATE) != sc.LOGFIRE_TOOL_TEMPLATE:
        return None
    error = parse_json(span.attributes.get(sc.LOGFIRE_ERROR))
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    return error if isinstance(error, str) and error else None


LOGFIRE = Dialect(
    precedence=50,
    name="Logfire",
    markers=(sc.LOGFIRE_MSG_TEMPLATE,),
    kind=_kind,
    read=_read,
    error=_error,
    index_keys=frozenset({sc.LOGFIRE_MSG_TEMPLATE, sc.LOGFIRE_NAME, sc.LOGFIRE_ERROR}),
)
