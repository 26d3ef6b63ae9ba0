"""Span roles: which convention says a span is a tool, agent, plan, LLM, chain or retriever call.

See ``toolspan.bridge.facts`` for the order the conventions are read in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from json.scanner import make_scanner
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.model import Span

__all__ = ["AGENT", "CHAIN", "LLM", "OTHER", "PLAN", "RETRIEVER", "TOOL", "classify", "parse_json"]

TOOL: Final = "tool"
AGENT: Final = "agent"
PLAN: Final = "plan"
LLM: Final = "llm"
CHAIN: Final = "chain"
RETRIEVER: Final = "retriever"
OTHER: Final = "other"

_OP_KINDS: Final[Mapping[str, str]] = {
    sc.OP_EXECUTE_TOOL: TOOL,
    sc.OP_INVOKE_AGENT: AGENT,
    sc.OP_CREATE_AGENT: AGENT,
    sc.OP_CHAT: LLM,
    sc.OP_TEXT_COMPLETION: LLM,
    sc.OP_GENERATE_CONTENT: LLM,
    sc.OP_EMBEDDINGS: LLM,
    sc.OP_RETRIEVAL: RETRIEVER,
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
_LLAMAINDEX_AGENT_RUN: Final = re.compile(r"\w{0,100}(?:Agent|AgentWorkflow)\.run")
_JSON_START: Final = frozenset('{["-0123456789tfn')


def _nonfinite(text: str) -> str:
    """``NaN``, ``Infinity``, ``-Infinity`` in JSON text: the strings OTLP/JSON writes them as (the model
    holds strict-JSON values only, as the readers read non-finite doubles)."""
    return text


def _finite(text: str) -> float | str:
    value = float(text)
    if value - value != 0.0:  # an infinity (1e999): no JSON number holds it
        return "Infinity" if value > 0 else "-Infinity"
    return value


# Non-finite numbers (NaN, Infinity, 1e999) are read as the strings OTLP/JSON writes them as.
_DECODER: Final = json.JSONDecoder(parse_constant=_nonfinite, parse_float=_finite)
_scan_once: Final[Callable[[str, int], tuple[Any, int]]] = make_scanner(_DECODER)  # type: ignore[arg-type]
# An escaped UTF-16 surrogate (``\ud800``): a pair makes one character, one alone decodes to text no UTF-8
# can carry (no view could be written), so such JSON stays the (ASCII) text it is.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_LONE: Final = re.compile("[\ud800-\udfff]")
# JSON nested deeper than this stays text: how deep the decoder could go otherwise depends on how deep the
# caller's stack already is (one view, two answers); toolspan's own captured values stop at 33 levels.
MAX_JSON_DEPTH: Final = 256
_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET: Final = re.compile(r"[\[\]{}]")


def _too_deep(text: str) -> bool:
    """Whether the JSON ``text`` nests deeper than ``MAX_JSON_DEPTH`` (outside its strings)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for found in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if found.group() in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def _carries(value: Any) -> bool:
    """Whether ``value`` (decoded JSON) holds no lone surrogate (iterative: any depth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE.search(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def classify(span: Span) -> str:
    """The role of ``span``: ``tool``, ``agent``, ``plan``, ``llm``, ``chain``, ``retriever`` or ``other``."""
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
        if kind == LLM and span.name.endswith(sc.LLAMAINDEX_PREPARE_CHAT):
            # LlamaIndex's step that builds the request (messages and tools): no model is called in it.
            return CHAIN
        if kind == CHAIN and _LLAMAINDEX_AGENT_RUN.fullmatch(span.name):
            # LlamaIndex's agent workflows (``FunctionAgent.run``, ``AgentWorkflow.run``) are CHAIN spans.
            return AGENT
        if kind is not None:
            return kind
    tl = attrs.get(sc.TRACELOOP_SPAN_KIND)
    if isinstance(tl, str):
        kind = _TRACELOOP_KINDS.get(tl.lower())
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


def parse_json(value: Any) -> Any:
    """``value`` parsed if it is a string holding JSON (a lone surrogate escape and nesting deeper than
    ``MAX_JSON_DEPTH`` are not: that text stays text), non-finite numbers (``NaN``, ``Infinity``, ``1e999``)
    read as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; anything else (or non-JSON text)
    unchanged."""
    if isinstance(value, str) and value:
        first = value[0]
        if first in _JSON_START:
            if first in "[{" and _too_deep(value):
                return value
            # The C scanner directly: json.loads' wrapper costs more than decoding a small value.
            try:
                obj, end = _scan_once(value, 0)
            except (StopIteration, ValueError, RecursionError):
                return value
            if end == len(value) or not value[end:].strip():
                if "\\u" in value and _SURROGATE_ESCAPE.search(value) and not _carries(obj):
                    return value
                return obj
            return value
        if first in " \t\r\n":
            if _too_deep(value):
                return value
            try:
                obj = _DECODER.decode(value)
            except (ValueError, RecursionError):
                return value
            return obj if "\\u" not in value or _carries(obj) else value
    return value
