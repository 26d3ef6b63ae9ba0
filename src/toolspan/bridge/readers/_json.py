"""The JSON library of the readers and the CLI: orjson when installed (an optional extra), else the stdlib.

orjson parses and writes several times faster. Every document the standard library accepts is still
accepted: input orjson rejects (``NaN``, ``Infinity``, lone surrogates, ...) is parsed again with
``json.loads``, so error messages are the standard library's. Known difference with orjson: integers
beyond 64 bits parse as floats (OTLP and Jaeger carry at most int64). ``TOOLSPAN_JSON=stdlib`` turns
orjson off.

Non-finite numbers: the readers read them (``NaN``/``Infinity`` literals, numbers beyond a double such
as ``1e999``, ``doubleValue: "NaN"``, protobuf and Jaeger doubles) as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"``, as OTLP/JSON (proto3 JSON) encodes non-finite doubles. Output is
always strict JSON: with the standard library a non-finite float a view computed is written as those
strings too; orjson writes it as ``null`` (it cannot do otherwise without a slow second pass). The
only such values are the ones the views parse out of JSON text inside attributes (a tool's arguments
written with ``NaN``).

Text no UTF-8 can carry: the readers read a lone surrogate as the text of its escape (``_writable``), so a
span holds none. The writers are strict UTF-8 whatever they are given: a lone surrogate a caller's own span
holds is written as its JSON escape (``"\\ud800"``), an integer too long for decimal text as its hex text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import IO, Any

from toolspan._util import env as _env
from toolspan.bridge.readers._writable import may_hold_surrogates, writable_document, writable_int

Loads = Callable[[Any], Any]
Dumps = Callable[[Any], bytes]


def _orjson() -> Any:
    if (_env.get(_env.TOOLSPAN_JSON) or "auto").lower() == "stdlib":
        return None
    try:
        import orjson
    except ImportError:
        return None
    return orjson


def backend() -> str:
    """``"orjson"`` or ``"stdlib"``: what ``loads_function`` and ``dumps_function`` use now."""
    return "stdlib" if _orjson() is None else "orjson"


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
    fast = _orjson()
    if fast is None:
        return stdlib_loads
    fast_loads, slow_loads, fast_error = fast.loads, stdlib_loads, fast.JSONDecodeError

    def loads(data: Any) -> Any:
        try:
            return fast_loads(data)
        except fast_error:
            return slow_loads(data)

    return loads


def nonfinite_text(value: float) -> str:
    """``"NaN"``, ``"Infinity"`` or ``"-Infinity"``: how OTLP/JSON writes a non-finite double."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (nested in lists, tuples and dicts) as ``nonfinite_text``, and
    every integer too long for decimal text as its hex text (``_writable.writable_int``)."""
    if type(value) is float:
        return value if math.isfinite(value) else nonfinite_text(value)
    if type(value) is int:
        return writable_int(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else nonfinite_text(value)
    return value


def dumps_document(value: Any, indent: int | None = None) -> bytes:
    """One JSON document as strict UTF-8 JSON (non-finite floats as strings, see ``finite``)."""
    try:
        text = json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:
        text = json.dumps(finite(value), ensure_ascii=False, indent=indent, allow_nan=False)
    return text.encode("utf-8", "backslashreplace")


def _stdlib_text_dumps() -> Callable[[Any], str]:
    from json import encoder

    make = getattr(encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - pure-Python json
        plain = json.JSONEncoder(
            ensure_ascii=False, check_circular=False, separators=(",", ":"), allow_nan=False
        ).encode

        def careful(value: Any) -> str:
            try:
                return plain(value)
            except ValueError:
                return plain(finite(value))

        return careful

    def not_json(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan);
    # built once and reused, unlike JSONEncoder.encode which builds one per call.
    chunks = make(None, not_json, encoder.encode_basestring, None, ":", ",", False, False, False)
    join = "".join

    def text(value: Any) -> str:
        try:
            return join(chunks(value, 0))
        except ValueError:  # a non-finite float
            return join(chunks(finite(value), 0))

    return text


def dumps_function() -> Dumps:
    """Compact UTF-8 JSON of one value; falls back to the standard library for what orjson refuses."""
    text = _stdlib_text_dumps()
    fast = _orjson()
    if fast is None:
        return lambda value: text(value).encode("utf-8", "backslashreplace")
    fast_dumps = fast.dumps

    def dumps(value: Any) -> bytes:
        try:
            return bytes(fast_dumps(value))
        except TypeError:  # an integer beyond 64 bits, a non-string key, ...
            return text(value).encode("utf-8", "backslashreplace")

    return dumps


def write_json_lines(items: Iterable[Any], out: IO[bytes], batch: int = 4096) -> int:
    """Write each item as one line of compact JSON; returns how many were written."""
    n = 0
    buf: list[Any] = []
    fast = _orjson()
    if fast is None:  # join text, encode once per batch
        text = _stdlib_text_dumps()
        for item in items:
            buf.append(text(item))
            n += 1
            if len(buf) >= batch:
                buf.append("")
                out.write("\n".join(buf).encode("utf-8", "backslashreplace"))
                buf.clear()
        if buf:
            buf.append("")
            out.write("\n".join(buf).encode("utf-8", "backslashreplace"))
        return n
    dumps = dumps_function()
    for item in items:
        buf.append(dumps(item))
        n += 1
        if len(buf) >= batch:
            buf.append(b"")
            out.write(b"\n".join(buf))
            buf.clear()
    if buf:
        buf.append(b"")
        out.write(b"\n".join(buf))
    return n
