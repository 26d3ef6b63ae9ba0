"""Read a model call (generation) out of an LLM span: model name, token usage and finish reason.

Conventions read: OTel GenAI (``gen_ai.response.model`` / ``gen_ai.request.model``, ``gen_ai.usage.*`` and
their older ``prompt_tokens`` / ``completion_tokens`` names, ``gen_ai.response.finish_reasons`` or the
output messages' ``finish_reason``), OpenInference (``llm.model_name``, ``llm.token_count.*``,
``llm.finish_reason``) and OpenLLMetry (GenAI names). Content in span events and joined logs counts too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._event_content import content_attributes
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.model import Span

__all__ = ["ModelCall", "Usage", "completed", "model_call", "total_usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    def as_dict(self) -> dict[str, int | None]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }


@dataclass(frozen=True, slots=True)
class ModelCall:
    span: Span
    model: str | None
    usage: Usage
    finish_reason: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, **self.usage.as_dict(), "finish_reason": self.finish_reason}


def _int(attrs: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


_RAW_FINISH: Final = re.compile(r"\bfinish_reason='([a-z_]{1,40})'")


def _finish(attrs: Mapping[str, Any]) -> str | None:
    value = parse_json(attrs.get(sc.GEN_AI_RESPONSE_FINISH_REASONS))
    if isinstance(value, list) and value:
        return str(value[-1])
    if isinstance(value, str) and value:
        return value
    value = attrs.get(sc.OI_LLM_FINISH_REASON)
    if isinstance(value, str) and value:
        return value
    messages = parse_json(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES))
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, Mapping) and message.get("finish_reason"):
                return str(message["finish_reason"])
    # smolagents records the provider's response only as the text of the SDK object (``raw``) in its
    # output message: read the one field the OpenAI SDK prints in a fixed form, ``finish_reason='...'``.
    output = parse_json(attrs.get(sc.OI_OUTPUT_VALUE))
    reason = output.get("finish_reason") if isinstance(output, Mapping) else None
    if isinstance(reason, str) and reason:  # a model client's result object (AutoGen's CreateResult)
        return reason
    raw = output.get("raw") if isinstance(output, Mapping) else None
    if isinstance(raw, str):
        found = _RAW_FINISH.findall(raw)
        if found:
            return str(found[-1])
    return None


def _response_metadata(attrs: Mapping[str, Any]) -> Mapping[str, Any]:
    """LangChain's ``response_metadata`` of the last message in a recorded output, if any."""
    found: Mapping[str, Any] = {}

    def walk(node: Any, depth: int) -> None:
        nonlocal found
        if depth > 8:
            return
        if isinstance(node, Mapping):
            meta = node.get("response_metadata")
            if isinstance(meta, Mapping) and meta:
                found = meta
            for value in node.values():
                walk(value, depth + 1)
        elif isinstance(node, list):
            for value in node:
                walk(value, depth + 1)

    for key in (sc.OI_OUTPUT_VALUE, sc.TRACELOOP_ENTITY_OUTPUT):
        walk(parse_json(attrs.get(key)), 0)
    return found


def _haystack_meta(attrs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``meta`` of the last reply a Haystack agent's llm step recorded (model, finish reason, usage)."""
    output = parse_json(attrs.get(sc.HAYSTACK_LLM_OUTPUT))
    replies = output.get("replies") if isinstance(output, Mapping) else None
    if isinstance(replies, list) and replies and isinstance(replies[-1], Mapping):
        meta = replies[-1].get("meta")
        if isinstance(meta, Mapping):
            return meta
    return {}


def model_call(span: Span, enclosing: Sequence[Span] = ()) -> ModelCall:
    """The model call recorded by the LLM span ``span`` (fields ``None`` where the span says nothing).

    ``enclosing``: the spans right above it, nearest first. A LangChain chain span whose output is the
    model's message (``prompt | model``, as OpenLLMetry records it while naming the model ``unknown`` on the
    model span) then gives the model name and finish reason the model span lacks.
    """
    attrs = content_attributes(span, is_tool=False)
    model = None
    for key in (sc.GEN_AI_RESPONSE_MODEL, sc.OI_LLM_MODEL_NAME, sc.GEN_AI_REQUEST_MODEL):
        value = attrs.get(key)
        if isinstance(value, str) and value and value != "unknown":
            model = value
            break
    usage = Usage(
        input_tokens=_int(
            attrs, sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_PROMPT_TOKENS, sc.OI_TOKEN_COUNT_PROMPT
        ),
        output_tokens=_int(
            attrs,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS,
            sc.GEN_AI_USAGE_COMPLETION_TOKENS,
            sc.OI_TOKEN_COUNT_COMPLETION,
        ),
        cached_tokens=_int(attrs, sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, sc.OI_TOKEN_COUNT_CACHE_READ),
        reasoning_tokens=_int(attrs, sc.GEN_AI_USAGE_REASONING_TOKENS, sc.OI_TOKEN_COUNT_REASONING),
    )
    finish = _finish(attrs)
    haystack = _haystack_meta(attrs) if sc.HAYSTACK_LLM_OUTPUT in attrs else {}
    if haystack:
        found = haystack.get("usage")
        counts: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        usage = Usage(
            input_tokens=usage.input_tokens
            if usage.input_tokens is not None
            else _int(counts, "prompt_tokens", "input_tokens"),
            output_tokens=usage.output_tokens
            if usage.output_tokens is not None
            else _int(counts, "completion_tokens", "output_tokens"),
            cached_tokens=usage.cached_tokens,
            reasoning_tokens=usage.reasoning_tokens,
        )
        name, reason = haystack.get("model"), haystack.get("finish_reason")
        model = model or (name if isinstance(name, str) and name else None)
        finish = finish or (reason if isinstance(reason, str) and reason else None)
    for source in (span, *enclosing):
        if model is not None and finish is not None:
            break
        meta = _response_metadata(attrs if source is span else source.attributes)
        name = meta.get("model_name", meta.get("model"))
        model = model or (name if isinstance(name, str) and name else None)
        reason = meta.get("finish_reason", meta.get("stop_reason"))
        finish = finish or (reason if isinstance(reason, str) and reason else None)
    return ModelCall(span=span, model=model, usage=usage, finish_reason=finish)


def completed(call: ModelCall, inner: ModelCall) -> ModelCall:
    """``call`` with the fields it lacks taken from ``inner``, the same call recorded inside it."""
    u, v = call.usage, inner.usage
    return ModelCall(
        span=call.span,
        model=call.model if call.model is not None else inner.model,
        usage=Usage(
            input_tokens=u.input_tokens if u.input_tokens is not None else v.input_tokens,
            output_tokens=u.output_tokens if u.output_tokens is not None else v.output_tokens,
            cached_tokens=u.cached_tokens if u.cached_tokens is not None else v.cached_tokens,
            reasoning_tokens=u.reasoning_tokens if u.reasoning_tokens is not None else v.reasoning_tokens,
        ),
        finish_reason=call.finish_reason if call.finish_reason is not None else inner.finish_reason,
    )


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def total_usage(calls: Iterable[ModelCall]) -> Usage:
    """The sum of the model calls' usage (a field is ``None`` when no call recorded it)."""
    items = [c.usage for c in calls]
    return Usage(
        input_tokens=_sum(u.input_tokens for u in items),
        output_tokens=_sum(u.output_tokens for u in items),
        cached_tokens=_sum(u.cached_tokens for u in items),
        reasoning_tokens=_sum(u.reasoning_tokens for u in items),
    )
