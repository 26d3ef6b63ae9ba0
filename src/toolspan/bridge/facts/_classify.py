"""Span roles: which convention says a span is a tool, agent, plan, LLM, chain or retriever call.

See ``toolspan.bridge.facts`` for the order the conventions are read in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects import dialect_kind
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
_OI_KINDS: Final[Mapping[str, str]] = {
    sc.OI_KIND_TOOL: TOOL,
    sc.OI_KIND_AGENT: AGENT,
    sc.OI_KIND_LLM: LLM,
    sc.OI_KIND_EMBEDDING: LLM,
    sc.OI_KIND_CHAIN: CHAIN,
    sc.OI_KIND_RETRIEVER: RETRIEVER,
}
_TRACELOOP_KINDS: Final[Mapping[str, str]] = {
    sc.TRACELOOP_KIND_TOOL: TOOL,
    sc.TRACELOOP_KIND_AGENT: AGENT,
    sc.TRACELOOP_KIND_WORKFLOW: CHAIN,
    sc.TRACELOOP_KIND_TASK: CHAIN,
}


def classify(span: Span) -> str:
    """The kind of ``span``: ``tool``, ``agent``, ``plan``, ``llm``, ``chain``, ``retriever`` or ``other``.

    A kind its tracer states (``gen_ai.operation.name``, ``openinference.span.kind``, ``traceloop.span.kind``)
    is the span's kind, whatever its name or place in the tree; only a span whose tracer states none is
    recognised by its attributes or name."""
    attrs = span.attributes
    if sc.TOOLSPAN_PLAN_NAME in attrs:
        return PLAN
    if attrs.get(sc.GEN_AI_TOOL_NAME) == sc.ADK_MERGED_TOOLS:
        # Google ADK's record of merged parallel responses, for its web UI: every call has its own span.
        return OTHER
    op = attrs.get(sc.GEN_AI_OPERATION_NAME)
    if op is not None:
        kind = _OP_KINDS.get(op) if isinstance(op, str) else None
        if kind is not None:
            return kind
    oi = attrs.get(sc.OPENINFERENCE_SPAN_KIND)
    if isinstance(oi, str):
        kind = _OI_KINDS.get(oi.upper())
        if kind is not None:
            return kind
    tl = attrs.get(sc.TRACELOOP_SPAN_KIND)
    if isinstance(tl, str):
        kind = _TRACELOOP_KINDS.get(tl.lower())
        if kind is not None:
            return kind
    kind = dialect_kind(span)
    if kind is not None:
        return kind
    if sc.GEN_AI_TOOL_NAME in attrs or span.name.startswith(sc.TOOL_SPAN_PREFIX):
        return TOOL
    if sc.HAYSTACK_TOOL_NAME in attrs or span.name == sc.HAYSTACK_TOOL_STEP:
        return TOOL
    if span.name == sc.HAYSTACK_AGENT_RUN:
        return AGENT
    if span.name == sc.HAYSTACK_LLM_STEP:
        return LLM
    if sc.ADK_LLM_RESPONSE in attrs:
        # Google ADK's legacy ``call_llm`` span (its own model call, with the model's response).
        return LLM
    return OTHER


def calls_model(span: Span) -> bool:
    """Whether an ``llm`` span records a call to a model. OpenInference marks every span of a LlamaIndex LLM's
    methods ``LLM``, among them ``…_prepare_chat_with_tools``, which only builds the request (messages and
    tools) that the model call next to it sends: that span keeps its kind and is no model call."""
    return not span.name.endswith(sc.LLAMAINDEX_PREPARE_CHAT)
