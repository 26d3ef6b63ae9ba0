"""Span roles: which convention says a span is a tool, agent, plan, LLM, chain or retriever call.

See ``toolspan.bridge.facts`` for the order the conventions are read in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects import (
    every,
    hooks,
    recognised_kind,
    stated_kind,
    unrecorded,
)
from toolspan.bridge.facts._kinds import AGENT, CHAIN, LLM, OTHER, PLAN, RETRIEVER, TOOL
from toolspan.bridge.model import Span

__all__ = ["calls_model", "classify"]

_OP_KINDS: Final[Mapping[str, str]] = {
    sc.OP_EXECUTE_TOOL: TOOL,
    sc.OP_INVOKE_AGENT: AGENT,
    sc.OP_CREATE_AGENT: AGENT,
    sc.OP_CHAT: LLM,
    sc.OP_TEXT_COMPLETION: LLM,
    sc.OP_GENERATE_CONTENT: LLM,
    sc.OP_EMBEDDINGS: LLM,
    sc.OP_RETRIEVAL: RETRIEVER,
    sc.OP_INVOKE_WORKFLOW: CHAIN,
    sc.OP_PLAN: CHAIN,
    sc.OP_SEARCH_MEMORY: RETRIEVER,
}


def classify(span: Span) -> str:
    """The kind of ``span``: ``tool``, ``agent``, ``plan``, ``llm``, ``chain``, ``retriever`` or ``other``.

    A kind its tracer states (``gen_ai.operation.name``, a convention's marker: ``openinference.span.kind``,
    ``traceloop.span.kind``, ...) is the span's kind, whatever its name or place in the tree; only a span
    whose tracer states none is recognised by its attributes or name (``Dialect.recognised``)."""
    attrs = span.attributes
    if sc.TOOLSPAN_PLAN_NAME in attrs:
        return PLAN
    if unrecorded(attrs):
        return OTHER
    op = attrs.get(sc.GEN_AI_OPERATION_NAME)
    if op is not None:
        kind = _OP_KINDS.get(op) if isinstance(op, str) else None
        if kind is not None:
            return kind
    kind = stated_kind(span)
    if kind is not None:
        return kind
    if sc.GEN_AI_TOOL_NAME in attrs or span.name.startswith(sc.TOOL_SPAN_PREFIX):
        return TOOL
    kind = recognised_kind(span)
    return OTHER if kind is None else kind


_calls_model: Final = every(hooks(lambda d: d.calls_model))


def calls_model(span: Span) -> bool:
    """Whether an ``llm`` span records a call to a model: a span a convention says only builds the request
    (LlamaIndex's ``…_prepare_chat_with_tools``, ``Dialect.calls_model``) keeps its kind and is no model
    call."""
    return _calls_model(span)
