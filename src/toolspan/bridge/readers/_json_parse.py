"""The JSON parser of the readers: orjson when installed (an optional extra), else the stdlib.

orjson parses several times faster. Every document the standard library accepts is still accepted: input
orjson rejects (``NaN``, ``Infinity``, lone surrogates, ...) is parsed again with ``json.loads``, so error
messages are the standard library's. Known difference with orjson: integers beyond 64 bits parse as floats
(OTLP and Jaeger carry at most int64). ``TOOLSPAN_JSON=stdlib`` turns orjson off (the choice is
``toolspan.bridge._json_write``'s, the writer's, so both use the same library).

Non-finite numbers: the readers read them (``NaN``/``Infinity`` literals, numbers beyond a double such
as ``1e999``, ``doubleValue: "NaN"``, protobuf and Jaeger doubles) as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"``, as OTLP/JSON (proto3 JSON) encodes non-finite doubles.

Text no UTF-8 can carry: the readers read a lone surrogate as the text of its escape (``_writable``), so a
span holds none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from toolspan.bridge._json_write import nonfinite_text, orjson_module
from toolspan.bridge.readers._writable import may_hold_surrogates, writable_document

__all__ = ["Loads", "loads_function", "stdlib_loads"]

Loads = Callable[[Any], Any]


def _finite_float(text: str) -> float | str:
    number = float(text)
    return number if math.isfinite(number) else nonfinite_text(number)


# The standard library's parser, reading ``NaN``/``Infinity``/``-Infinity`` literals and numbers too
# large for a double (``1e999``) as the strings OTLP/JSON uses for non-finite doubles.
_DECODER = json.JSONDecoder(parse_constant=str, parse_float=_finite_float)


def stdlib_loads(data: Any) -> Any:
    """``json.loads`` (same acceptance, same errors) with non-finite numbers read as strings and every lone
    surrogate (``"\\ud800"``, which orjson refuses) as the text of its escape (``_writable``)."""
    if isinstance(data, (bytes, bytearray)):
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    elif not isinstance(data, str):
        raise TypeError(f"the JSON object must be str or bytes, not {type(data).__name__}")
    doc = _DECODER.decode(data)
    return writable_document(doc) if may_hold_surrogates(data) else doc


def loads_function() -> Loads:
    """A ``loads(bytes | str)`` with the standard library's acceptance and errors."""
    fast = orjson_module()
    if fast is None:
        return stdlib_loads
    fast_loads, slow_loads, fast_error = fast.loads, stdlib_loads, fast.JSONDecodeError

    def loads(data: Any) -> Any:
        try:
            return fast_loads(data)
        except fast_error:
            return slow_loads(data)

    return loads
