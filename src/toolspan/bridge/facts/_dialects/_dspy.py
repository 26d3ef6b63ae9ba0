"""DSPy through OpenInference: a tool span named after the method that ran it (``get_weather.__call__``),
and ReAct's next tool in the model's text (its ChatAdapter writes each field under a ``[[ ## <field> ## ]]``
header: ``next_tool_name``, ``next_tool_args``), with no call id."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, Requested
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.model import Span

__all__ = ["DSPY"]

_FIELD: Final = re.compile(r"\[\[ ## (\w{1,100}) ## \]\]")


def _tool_name(span: Span, attrs: Mapping[str, Any]) -> str | None:
    name = span.name
    if name.endswith(sc.DSPY_TOOL_SUFFIXES) and sc.OPENINFERENCE_SPAN_KIND in attrs:
        return name.rsplit(".", 1)[0]
    return None


def _fields(text: str) -> dict[str, str]:
    fields = {}
    heads = list(_FIELD.finditer(text))
    for n, head in enumerate(heads):
        end = heads[n + 1].start() if n + 1 < len(heads) else len(text)
        fields[head[1]] = text[head.end() : end].strip()
    return fields


def _requests(attrs: Mapping[str, Any]) -> list[Requested]:
    """ReAct's next tool, from the model's text (OpenInference's first output message)."""
    text = attrs.get(f"{sc.OI_LLM_OUTPUT_MESSAGES}.0.message.content")
    if not isinstance(text, str) or sc.DSPY_NEXT_TOOL_NAME not in text:
        return []
    fields = _fields(text[:100_000])
    name = fields.get(sc.DSPY_NEXT_TOOL_NAME)
    if not name:
        return []
    return [Requested(None, name, parse_json(fields.get(sc.DSPY_NEXT_TOOL_ARGS)))]


DSPY = Dialect(
    precedence=110,
    name="DSPy",
    index_keys=frozenset({sc.OPENINFERENCE_SPAN_KIND}),
    name_of_tool=_tool_name,
    text_requests_of=_requests,
)
