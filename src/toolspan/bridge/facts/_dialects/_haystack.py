"""Haystack's own tracer, which marks its spans by name: ``haystack.agent.run`` an agent,
``haystack.agent.step.llm`` a model call, ``haystack.agent.step.tool`` (or a span with
``haystack.tool.name``) a tool. Its keys: ``haystack.tool.name`` / ``.error``,
``haystack.agent.step.tool.input`` / ``.output``, ``haystack.agent.input`` / ``.output``, and
``haystack.agent.step.llm.output`` (the model's replies: their ``meta`` holds model, finish reason, usage).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, int_value
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, LLM, TOOL
from toolspan.bridge.model import Span

__all__ = ["HAYSTACK"]


def _kind(span: Span) -> str | None:
    if sc.HAYSTACK_TOOL_NAME in span.attributes or span.name == sc.HAYSTACK_TOOL_STEP:
        return TOOL
    if span.name == sc.HAYSTACK_AGENT_RUN:
        return AGENT
    if span.name == sc.HAYSTACK_LLM_STEP:
        return LLM
    return None


def _failed(attrs: Mapping[str, Any]) -> bool:
    return bool(attrs.get(sc.HAYSTACK_TOOL_ERROR))


def _model_facts(attrs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``meta`` of the last reply an agent's llm step recorded: model, finish reason, usage."""
    output = parse_json(attrs.get(sc.HAYSTACK_LLM_OUTPUT)) if sc.HAYSTACK_LLM_OUTPUT in attrs else None
    replies = output.get("replies") if isinstance(output, Mapping) else None
    if not (isinstance(replies, list) and replies and isinstance(replies[-1], Mapping)):
        return None
    meta = replies[-1].get("meta")
    if not isinstance(meta, Mapping) or not meta:
        return None
    found = meta.get("usage")
    counts: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    name, reason = meta.get("model"), meta.get("finish_reason")
    return {
        "model": name if isinstance(name, str) and name else None,
        "finish_reason": reason if isinstance(reason, str) and reason else None,
        "input_tokens": int_value(counts, "prompt_tokens", "input_tokens"),
        "output_tokens": int_value(counts, "completion_tokens", "output_tokens"),
    }


HAYSTACK = Dialect(
    precedence=100,
    name="Haystack",
    markers=(sc.HAYSTACK_TOOL_NAME,),
    span_names=(sc.HAYSTACK_TOOL_STEP, sc.HAYSTACK_AGENT_RUN, sc.HAYSTACK_LLM_STEP),
    kind=_kind,
    recognised=True,
    failed=_failed,
    index_keys=frozenset({sc.HAYSTACK_TOOL_NAME, sc.HAYSTACK_TOOL_ERROR}),
    tool_name_keys=(sc.HAYSTACK_TOOL_NAME,),
    tool_input_keys=(sc.HAYSTACK_TOOL_INPUT,),
    tool_output_keys=(sc.HAYSTACK_TOOL_OUTPUT,),
    agent_input_keys=(sc.HAYSTACK_AGENT_INPUT,),
    agent_output_keys=(sc.HAYSTACK_AGENT_OUTPUT, sc.HAYSTACK_LLM_OUTPUT),
    request_keys=(sc.HAYSTACK_LLM_OUTPUT,),
    model_facts_of=_model_facts,
)
