"""LlamaIndex through OpenInference, which marks every span of an LLM's methods ``LLM``, among them
``…_prepare_chat_with_tools``: it only builds the request (messages and tools) that the model call next to
it sends, so it keeps its kind and is no model call."""

from __future__ import annotations

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.model import Span

__all__ = ["LLAMAINDEX"]


def _calls_model(span: Span) -> bool:
    return not span.name.endswith(sc.LLAMAINDEX_PREPARE_CHAT)


LLAMAINDEX = Dialect(precedence=130, name="LlamaIndex", calls_model=_calls_model)
