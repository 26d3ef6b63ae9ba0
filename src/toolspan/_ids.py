"""The two ids of a tool call, derived from its span: ``execution_id`` and ``tool_call_id``.

``execution_id = "exec_" + <16-hex span id>`` (the act/observe event stream); the synthesized
``tool_call_id`` is ``"call_" + <16-hex span id>`` (plan records) and is used only when the model gave no
id of its own.
Both are unique per span, so parallel calls of one tool never share an id.
"""

from __future__ import annotations

from toolspan.semconv import CALL_ID_PREFIX, EXECUTION_ID_PREFIX

__all__ = ["execution_id", "parse_execution_id", "span_id_hex", "synthetic_call_id"]


def span_id_hex(span_id: int) -> str:
    """The span id as 16 lowercase hex digits."""
    return format(span_id, "016x")


def execution_id(span_id: int) -> str:
    """``"exec_" + <16-hex span id>``."""
    return EXECUTION_ID_PREFIX + format(span_id, "016x")


def synthetic_call_id(span_id: int) -> str:
    """``"call_" + <16-hex span id>``: the tool call id of a call the model gave no id for."""
    return CALL_ID_PREFIX + format(span_id, "016x")


def parse_execution_id(value: str) -> int | None:
    """The span id inside an ``execution_id``, or ``None`` when ``value`` is not one."""
    if not value.startswith(EXECUTION_ID_PREFIX):
        return None
    digits = value[len(EXECUTION_ID_PREFIX) :]
    if len(digits) != 16:
        return None
    try:
        span_id = int(digits, 16)
    except ValueError:
        return None
    return span_id or None
