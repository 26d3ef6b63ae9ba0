"""Google ADK's own tracer. Its legacy ``call_llm`` span (with ``gcp.vertex.agent.llm_response``, the
model's response) is a model call; its content: ``gcp.vertex.agent.llm_request`` / ``.llm_response`` (a
Gemini request and response), ``.tool_call_args`` / ``.tool_response`` (a tool's arguments and result; on
its failure path ``<not specified>``, read as absent). Its ``execute_tool (merged)`` span, whose tool is
``(merged tools)``, runs no tool (each call has its own span): ``other``. A model call's request holds its
whole conversation, the tools' responses included (Gemini ``functionResponse`` parts by the call's id;
``function_response`` in Python's SDK): ADK for JavaScript records a tool's call only when the tool returns,
so for a tool that threw that response (``{"error": ...}``) is all the trace holds of its outcome.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import LLM
from toolspan.bridge.model import Span

__all__ = ["GOOGLE_ADK"]


def _kind(span: Span) -> str | None:
    return LLM if sc.ADK_LLM_RESPONSE in span.attributes else None


def _merged(attrs: Mapping[str, Any]) -> bool:
    # ADK's record of merged parallel responses, for its web UI: every call has its own span.
    return attrs.get(sc.GEN_AI_TOOL_NAME) == sc.ADK_MERGED_TOOLS


_MAX_DEPTH: Final = 8  # contents, parts, a part: a few levels down


def _response_parts(value: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        part = value.get("function_response", value.get("functionResponse"))
        if isinstance(part, Mapping):
            yield part
            return
        for item in value.values():
            yield from _response_parts(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _response_parts(item, depth + 1)


def _responses(attrs: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = attrs.get(sc.ADK_LLM_REQUEST)
    if not isinstance(raw, str) or ("functionResponse" not in raw and "function_response" not in raw):
        return {}  # parsed only when it may hold a response
    out: dict[str, Any] = {}
    for part in _response_parts(parse_json(raw)):
        cid = part.get("id")
        if isinstance(cid, str) and cid and "response" in part:
            out[cid] = part["response"]
    return out


GOOGLE_ADK = Dialect(
    precedence=90,
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
    responses_of=_responses,
)
