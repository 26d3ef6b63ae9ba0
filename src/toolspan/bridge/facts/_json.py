"""JSON held as text in span attributes, as every fact reader reads it (``parse_json``); a leaf module."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import accumulate
from json.scanner import make_scanner
from typing import Any, Final

__all__ = ["MAX_JSON_DEPTH", "parse_json"]

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
# A JSON string, or an unterminated one running to the end of the text: every match ends a string or the
# text, so stripping strings reads each character once (a string that fails to close never makes the scan
# start over at the next quote: quotes of escaped quotes after many brackets were read in quadratic time).
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]+")
_STEP: Final = {"[": 1, "{": 1, "]": -1, "}": -1}
_CHUNK: Final = 4096


def _too_deep(text: str) -> bool:
    """Whether the JSON ``text`` nests deeper than ``MAX_JSON_DEPTH`` (outside its strings), in one linear
    pass: the strings stripped, then the running depth of the brackets left."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depth = 0
    for at in range(0, len(brackets), _CHUNK):  # a chunk at a time: deep text is told at its start
        running = list(accumulate(map(_STEP.__getitem__, brackets[at : at + _CHUNK]), initial=depth))
        if max(running) > MAX_JSON_DEPTH:
            return True
        depth = running[-1]
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
