"""The one place that builds toolspan's ids from span and trace ids; neutral: instrumentation,
exporters and the bridge all import it, and it imports nothing but ``semconv``.

- ``execution_id = "exec_" + <16-hex span id>``: one tool call's execution (act/observe events);
- ``tool_call_id = "call_" + <16-hex span id>``: synthesized only when the model gave no id of its own;
- ``plan_id = "plan_" + <span id>`` of a plan span (or ``+ <trace id>`` for a trace's synthetic plan).

Ids are unique per span, so parallel calls of one tool never share an id. A span id may be given as
an int or as its lowercase hex text (what the bridge's neutral model holds).

And the one place that reads them: ``hex_id`` (``parse_trace_id``, ``parse_span_id``) and
``parse_execution_id``. Every route, reader and cursor reads ids through them, with its own rule spelled as
arguments (exact lowercase by default, ``any_case``, ``short``) and its own message for what is none.
"""

from __future__ import annotations

import hashlib
from typing import Final

from toolspan.semconv import CALL_ID_PREFIX, EXECUTION_ID_PREFIX, PLAN_ID_PREFIX

__all__ = [
    "EXECUTION_ID_PATTERN",
    "HEX_DIGITS",
    "SPAN_ID_DIGITS",
    "TRACE_ID_DIGITS",
    "TRACE_ID_PATTERN",
    "hex_pattern",
    "arguments_sha256",
    "execution_id",
    "hex_id",
    "parse_execution_id",
    "parse_span_id",
    "parse_trace_id",
    "plan_id",
    "span_id_hex",
    "synthetic_call_id",
    "tool_ids",
]

HEX_DIGITS: Final = "0123456789abcdef"  # the one alphabet of ids: lowercase, how toolspan spells them
TRACE_ID_DIGITS: Final = 32
SPAN_ID_DIGITS: Final = 16
# As the OpenAPI document states them: an execution id exactly, a trace id a person may paste in any case.
EXECUTION_ID_PATTERN: Final = f"^{EXECUTION_ID_PREFIX}[0-9a-f]{{{SPAN_ID_DIGITS}}}$"
TRACE_ID_PATTERN: Final = f"^[0-9a-fA-F]{{{TRACE_ID_DIGITS}}}$"


def hex_pattern(digits: int) -> str:
    """The pattern (JSON Schema, OpenAPI) of ``digits`` lowercase hex digits: a value spelled as ids are."""
    return f"^[0-9a-f]{{{digits}}}$"


def hex_id(text: str, digits: int, *, short: bool = False, any_case: bool = False) -> str | None:
    """``text`` as an id of ``digits`` lowercase hex digits, else ``None``. By default only that spelling
    itself (one spelling per id: a cursor's, a stored id's); ``any_case``: upper-case digits too; ``short``:
    1 to ``digits`` digits, left-padded with zeros (Jaeger prints 64-bit trace ids as 16 digits, Tempo drops
    leading zeros). Nothing is stripped: a caller reading typed text strips it first."""
    if any_case:
        text = text.lower()
    size = len(text)
    if not (size == digits or (short and 0 < size < digits)) or text.strip(HEX_DIGITS):
        return None
    return text if size == digits else text.rjust(digits, "0")


def parse_trace_id(text: str, *, short: bool = False, any_case: bool = False) -> str | None:
    """``hex_id`` of a trace id (32 digits)."""
    return hex_id(text, TRACE_ID_DIGITS, short=short, any_case=any_case)


def parse_span_id(text: str, *, short: bool = False, any_case: bool = False) -> str | None:
    """``hex_id`` of a span id (16 digits)."""
    return hex_id(text, SPAN_ID_DIGITS, short=short, any_case=any_case)


def span_id_hex(span_id: int | str) -> str:
    """The span id as 16 lowercase hex digits (hex text is returned as it is)."""
    return span_id if isinstance(span_id, str) else format(span_id, "016x")


def execution_id(span_id: int | str) -> str:
    """``"exec_" + <16-hex span id>``."""
    return EXECUTION_ID_PREFIX + span_id_hex(span_id)


def synthetic_call_id(span_id: int | str) -> str:
    """``"call_" + <16-hex span id>``: the tool call id of a call the model gave no id for."""
    return CALL_ID_PREFIX + span_id_hex(span_id)


def tool_ids(span_id: int) -> tuple[str, str]:
    """``(execution_id, synthetic_call_id)`` of one span, formatting its id once."""
    digits = format(span_id, "016x")
    return EXECUTION_ID_PREFIX + digits, CALL_ID_PREFIX + digits


def plan_id(hex_id: str) -> str:
    """``"plan_" + <id>``: a plan span's id from its span id (a trace's synthetic plan: its trace id)."""
    return PLAN_ID_PREFIX + hex_id


def parse_execution_id(value: str) -> int | None:
    """The span id inside an ``execution_id``, or ``None`` when ``value`` is not one."""
    if not value.startswith(EXECUTION_ID_PREFIX):
        return None
    # Exactly 16 lowercase hex digits: one spelling per id (``int`` alone takes signs, ``_`` and spaces).
    digits = parse_span_id(value[len(EXECUTION_ID_PREFIX) :])
    return None if digits is None else int(digits, 16) or None


def arguments_sha256(text: str | None) -> str:
    """The digest a person's decision names the arguments it was shown by (the control channel's ``shown``):
    hex SHA-256 of the arguments' JSON text as the tool span recorded it (its UTF-8 bytes, lone surrogates
    kept), of the empty text when nothing was recorded (content capture off)."""
    return hashlib.sha256((text or "").encode("utf-8", "surrogatepass")).hexdigest()
