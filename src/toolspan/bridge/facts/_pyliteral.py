"""Python literals some frameworks record instead of JSON (``str()`` of a dict: ``{'city': 'Paris'}``).

Parsed with ``ast.literal_eval`` (which builds values from literal syntax only and never runs code), after
limits checked on the text itself: its length and its nesting depth (so the parser never recurses deep or
builds a large value). Only values strict UTF-8 JSON can hold come back (tuples as lists; a number beyond a
double, ``1e999``, as the string ``"Infinity"``, as ``parse_json`` reads it); anything else (sets, bytes,
complex numbers, non-string keys, a string holding a lone surrogate such as ``'\\ud800'``, an integer too long
to write as decimal text such as a hex literal of 20,000 digits: ``sys.get_int_max_str_digits``) or any text
over the limits is not a literal: the caller keeps the text, which every view can write.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any, Final

from toolspan.errors import ToolspanError

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "python_literal"]

MAX_LENGTH: Final = 100_000
MAX_DEPTH: Final = 32
_OPEN: Final = frozenset("([{")
_CLOSE: Final = frozenset(")]}")
_LONE: Final = re.compile("[\ud800-\udfff]")
# Below this many bits an integer always has a decimal text (``sys.get_int_max_str_digits`` is 640 at least).
_SHORT_INT_BITS: Final = 2000


class NotALiteral(ToolspanError, ValueError):
    """The text is not a Python literal of a JSON value within the limits."""


def _depth(text: str) -> int:
    """The deepest bracket nesting outside string quotes (an upper bound: escapes are honoured)."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif ch in _CLOSE:
            depth -= 1
    return deepest


def _text(value: str) -> str:
    if not value.isascii() and _LONE.search(value):
        raise NotALiteral("a lone surrogate, which no UTF-8 can carry")
    return value


def _number(value: float | int) -> float | int | str:
    if isinstance(value, float):
        return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")
    if value.bit_length() > _SHORT_INT_BITS:
        try:
            int.__repr__(value)
        except ValueError:  # over sys.get_int_max_str_digits(): no JSON text can be written of it
            raise NotALiteral("an integer too long to write as decimal text") from None
    return value


def _json_value(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise NotALiteral("too deep")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(item, depth + 1) for item in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotALiteral("a key that is not a string")
            out[_text(key)] = _json_value(item, depth + 1)
        return out
    raise NotALiteral(f"a {type(value).__name__}, which JSON cannot hold")


def python_literal(text: str) -> Any:
    """The JSON value the Python literal ``text`` writes (``NotALiteral`` if it is none, or over limits)."""
    if len(text) > MAX_LENGTH:
        raise NotALiteral("too long")
    if _depth(text) > MAX_DEPTH:
        raise NotALiteral("too deep")
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        raise NotALiteral(str(e)) from None
    return _json_value(value)
