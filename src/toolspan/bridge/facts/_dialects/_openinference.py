"""OpenInference (Arize Phoenix's instrumentors: LangChain, LlamaIndex, CrewAI, DSPy, smolagents, AutoGen,
Agno, ...), marked by ``openinference.span.kind``: TOOL / AGENT / LLM / EMBEDDING / CHAIN / RETRIEVER.

Its keys: ``tool.name``, ``tool_call.id`` / ``tool.id``, ``input.value`` / ``output.value`` (a tool's
arguments and result, an agent's input and answer), ``agent.name``, ``session.id``, ``llm.model_name``,
``llm.token_count.*``, ``llm.finish_reason``, and the flattened
``llm.{input,output}_messages.<i>.message.{role,content}`` and
``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.*`` (the tool calls a model asked for).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, Requested, dispatched_call_id, flattened_calls
from toolspan.bridge.facts._kinds import AGENT, CHAIN, LLM, RETRIEVER, TOOL
from toolspan.bridge.model import Span

__all__ = ["OPENINFERENCE"]

_KINDS: Final[Mapping[str, str]] = {
    sc.OI_KIND_TOOL: TOOL,
    sc.OI_KIND_AGENT: AGENT,
    sc.OI_KIND_LLM: LLM,
    sc.OI_KIND_EMBEDDING: LLM,
    sc.OI_KIND_CHAIN: CHAIN,
    sc.OI_KIND_RETRIEVER: RETRIEVER,
}
_CALL: Final = re.compile(
    re.escape(sc.OI_LLM_OUTPUT_MESSAGES) + r"\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(.+)"
)


def _kind(span: Span) -> str | None:
    kind = span.attributes.get(sc.OPENINFERENCE_SPAN_KIND)
    return _KINDS.get(kind.upper()) if isinstance(kind, str) else None


def _messages(attrs: Mapping[str, Any], output: bool) -> list[dict[str, Any]] | None:
    """The flattened ``llm.{input,output}_messages.<i>.message.{role,content}`` as message dicts."""
    head = (sc.OI_LLM_OUTPUT_MESSAGES if output else sc.OI_LLM_INPUT_MESSAGES) + "."
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(head):
            continue
        index, _, field = key[len(head) :].partition(".message.")
        if index.isdigit() and field in ("role", "content"):
            found.setdefault(int(index), {})[field] = value
    return [found[i] for i in sorted(found)] or None


def _requests(attrs: Mapping[str, Any]) -> list[Requested]:
    return flattened_calls(attrs, _CALL, "function.name", "function.arguments")


def _dispatched_id(attrs: Mapping[str, Any]) -> str | None:
    return dispatched_call_id(attrs, sc.OI_INPUT_VALUE)


OPENINFERENCE = Dialect(
    precedence=10,
    name="OpenInference",
    markers=(sc.OPENINFERENCE_SPAN_KIND,),
    kind=_kind,
    index_keys=frozenset({sc.OPENINFERENCE_SPAN_KIND, sc.OI_TOOL_NAME, sc.OI_SESSION_ID}),
    tool_name_keys=(sc.OI_TOOL_NAME,),
    call_id_keys=(sc.OI_TOOL_CALL_ID, sc.OI_TOOL_ID),
    tool_input_keys=(sc.OI_INPUT_VALUE,),
    tool_output_keys=(sc.OI_OUTPUT_VALUE,),
    arguments_text_keys=(sc.OI_INPUT_VALUE,),
    dispatched_id_of=_dispatched_id,
    agent_name_keys=(sc.OI_AGENT_NAME,),
    agent_input_keys=(sc.OI_INPUT_VALUE,),
    agent_output_keys=(sc.OI_OUTPUT_VALUE,),
    conversation_keys=(sc.OI_SESSION_ID,),
    model_keys=(sc.OI_LLM_MODEL_NAME,),
    input_tokens_keys=(sc.OI_TOKEN_COUNT_PROMPT,),
    output_tokens_keys=(sc.OI_TOKEN_COUNT_COMPLETION,),
    cached_tokens_keys=(sc.OI_TOKEN_COUNT_CACHE_READ,),
    reasoning_tokens_keys=(sc.OI_TOKEN_COUNT_REASONING,),
    finish_reason_keys=(sc.OI_LLM_FINISH_REASON,),
    output_keys=(sc.OI_OUTPUT_VALUE,),
    request_keys=(sc.OI_OUTPUT_VALUE,),
    messages_of=_messages,
    requests_of=_requests,
)
