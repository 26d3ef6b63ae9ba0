"""Read a model call (generation) out of an LLM span: model name, token usage and finish reason.

Conventions read: OTel GenAI (``gen_ai.response.model`` / ``gen_ai.request.model``, ``gen_ai.usage.*`` and
their older ``prompt_tokens`` / ``completion_tokens`` names, ``gen_ai.response.finish_reasons`` or the
output messages' ``finish_reason``), and every framework convention's keys and hooks (``_dialects``:
OpenInference's ``llm.model_name``, ``llm.token_count.*``, ``llm.finish_reason``; Haystack's replies' meta;
...). Content in span events and joined logs counts too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects import first, hooks, int_value, keys
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


_int = int_value
# The keys each field is read from: GenAI's, then every convention's (``_dialects``), in their order.
_MODEL_KEYS: Final = (sc.GEN_AI_RESPONSE_MODEL, *keys(lambda d: d.model_keys), sc.GEN_AI_REQUEST_MODEL)
_INPUT_TOKENS: Final = (
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_PROMPT_TOKENS,
    *keys(lambda d: d.input_tokens_keys),
)
_OUTPUT_TOKENS: Final = (
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.GEN_AI_USAGE_COMPLETION_TOKENS,
    *keys(lambda d: d.output_tokens_keys),
)
_CACHED_TOKENS: Final = (sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, *keys(lambda d: d.cached_tokens_keys))
_REASONING_TOKENS: Final = (sc.GEN_AI_USAGE_REASONING_TOKENS, *keys(lambda d: d.reasoning_tokens_keys))
_FINISH_KEYS: Final = keys(lambda d: d.finish_reason_keys)
_FINISH_HOOKS: Final = hooks(lambda d: d.finish_reason_of)
# What a convention recorded of the call in a shape of its own (Haystack's replies' ``meta``).
_model_facts: Final = first(hooks(lambda d: d.model_facts_of))
_OUTPUT_KEYS: Final = keys(lambda d: d.output_keys)


def _finish(attrs: Mapping[str, Any]) -> str | None:
    value = parse_json(attrs.get(sc.GEN_AI_RESPONSE_FINISH_REASONS))
    if isinstance(value, list) and value:
        return str(value[-1])
    if isinstance(value, str) and value:
        return value
    for key in _FINISH_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    messages = parse_json(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES))
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, Mapping) and message.get("finish_reason"):
                return str(message["finish_reason"])
    for hook in _FINISH_HOOKS:  # in a convention's recorded output (AutoGen's, smolagents')
        reason = hook(attrs)
        if reason is not None:
            return reason
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

    for key in _OUTPUT_KEYS:
        walk(parse_json(attrs.get(key)), 0)
    return found


def model_call(span: Span, enclosing: Sequence[Span] = ()) -> ModelCall:
    """The model call recorded by the LLM span ``span`` (fields ``None`` where the span says nothing).

    ``enclosing``: the spans right above it, nearest first. A LangChain chain span whose output is the
    model's message (``prompt | model``, as OpenLLMetry records it while naming the model ``unknown`` on the
    model span) then gives the model name and finish reason the model span lacks.
    """
    attrs = content_attributes(span, is_tool=False)
    model = None
    for key in _MODEL_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and value and value != "unknown":
            model = value
            break
    usage = Usage(
        input_tokens=_int(attrs, *_INPUT_TOKENS),
        output_tokens=_int(attrs, *_OUTPUT_TOKENS),
        cached_tokens=_int(attrs, *_CACHED_TOKENS),
        reasoning_tokens=_int(attrs, *_REASONING_TOKENS),
    )
    finish = _finish(attrs)
    facts = _model_facts(attrs)
    if facts:
        usage = Usage(
            input_tokens=usage.input_tokens if usage.input_tokens is not None else facts.get("input_tokens"),
            output_tokens=usage.output_tokens
            if usage.output_tokens is not None
            else facts.get("output_tokens"),
            cached_tokens=usage.cached_tokens,
            reasoning_tokens=usage.reasoning_tokens,
        )
        model = model or facts.get("model")
        finish = finish or facts.get("finish_reason")
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
