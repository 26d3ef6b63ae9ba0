"""LlamaIndex through OpenInference, which marks every span of an LLM's methods ``LLM``, among them
``…_prepare_chat_with_tools``: it only builds the request (messages and tools) that the model call next to
it sends, so it keeps its kind and is no model call. Its ``call_tool`` workflow step records the event it
dispatches as a Python repr, ``ToolCall(..., tool_id='call_1')``: the model's id of the tool under it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.model import Span

__all__ = ["LLAMAINDEX"]


def _calls_model(span: Span) -> bool:
    return not span.name.endswith(sc.LLAMAINDEX_PREPARE_CHAT)


_TOOL_ID: Final = re.compile(r"^ToolCall\(.*?\btool_id='([^'\\]{1,256})'", re.DOTALL)


def _dispatched_id(attrs: Mapping[str, Any]) -> str | None:
    raw = attrs.get(sc.OI_INPUT_VALUE)
    if not isinstance(raw, str) or "ToolCall(" not in raw:
        return None  # parsed only when it may hold a call
    value = parse_json(raw)
    if isinstance(value, Mapping) and isinstance(value.get("ev"), str):
        found = _TOOL_ID.match(value["ev"][:4096])
        if found:
            return found[1]
    return None


LLAMAINDEX = Dialect(
    precedence=130, name="LlamaIndex", calls_model=_calls_model, dispatched_id_of=_dispatched_id
)
