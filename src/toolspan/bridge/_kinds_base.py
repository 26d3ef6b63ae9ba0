"""The span kinds the bridge knows, and the JSON reading every fact reader shares (a leaf module)."""

from __future__ import annotations

import json
from collections.abc import Callable
from json.scanner import make_scanner
from typing import Any, Final

__all__ = ["AGENT", "CHAIN", "LLM", "OTHER", "PLAN", "RETRIEVER", "TOOL", "parse_json"]

TOOL: Final = "tool"
AGENT: Final = "agent"
PLAN: Final = "plan"
LLM: Final = "llm"
CHAIN: Final = "chain"
RETRIEVER: Final = "retriever"
OTHER: Final = "other"

_JSON_START: Final = frozenset('{["-0123456789tfn')
_scan_once: Final[Callable[[str, int], tuple[Any, int]]] = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def parse_json(value: Any) -> Any:
    """``value`` parsed if it is a string holding JSON; anything else (or non-JSON text) unchanged."""
    if isinstance(value, str) and value:
        first = value[0]
        if first in _JSON_START:
            # The C scanner directly: json.loads' wrapper costs more than decoding a small value.
            try:
                obj, end = _scan_once(value, 0)
            except (StopIteration, ValueError, RecursionError):
                return value
            if end == len(value) or not value[end:].strip():
                return obj
            return value
        if first in " \t\r\n":
            try:
                return json.loads(value)
            except (ValueError, RecursionError):
                return value
    return value
