"""The JSON every output of toolspan is written with (the CLI's, the server's, the exporters'): orjson when
installed (an optional extra), else the stdlib; ``TOOLSPAN_JSON=stdlib`` turns orjson off, for the readers'
parser too (``readers._json_parse``).

Output is always strict JSON: with the standard library a non-finite float a view computed is written as
the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (as OTLP/JSON encodes non-finite doubles, and as
the readers read them); orjson writes it as ``null`` (it cannot do otherwise without a slow second pass).
The only such values are the ones the views parse out of JSON text inside attributes (a tool's arguments
written with ``NaN``).

The writers are strict UTF-8 whatever they are given: a lone surrogate a caller's own span holds is written
as its JSON escape (``"\\ud800"``), an integer too long for decimal text as its hex text (``writable_int``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import IO, Any, Final

from toolspan._util import env as _env

__all__ = [
    "Dumps",
    "backend",
    "dumps_document",
    "dumps_function",
    "finite",
    "nonfinite_text",
    "orjson_module",
    "writable_int",
    "write_json_lines",
]

Dumps = Callable[[Any], bytes]

# Below this many bits an integer always has a decimal text (``sys.get_int_max_str_digits`` is 640 at least).
_SHORT_INT_BITS: Final = 2000


def orjson_module() -> ModuleType | None:
    """orjson, unless it is not installed or ``TOOLSPAN_JSON=stdlib`` turns it off."""
    if (_env.get(_env.TOOLSPAN_JSON) or "auto").lower() == "stdlib":
        return None
    try:
        import orjson
    except ImportError:
        return None
    return orjson


def backend() -> str:
    """``"orjson"`` or ``"stdlib"``: what the readers' parser and ``dumps_function`` use now."""
    return "stdlib" if orjson_module() is None else "orjson"


def writable_int(value: int) -> int | str:
    """``value`` as it is, or its hex text when it is too long for decimal text."""
    if value.bit_length() > _SHORT_INT_BITS:
        try:
            int.__repr__(value)
        except ValueError:  # over sys.get_int_max_str_digits()
            return hex(value)
    return value


def nonfinite_text(value: float) -> str:
    """``"NaN"``, ``"Infinity"`` or ``"-Infinity"``: how OTLP/JSON writes a non-finite double."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (nested in lists, tuples and dicts) as ``nonfinite_text``, and
    every integer too long for decimal text as its hex text (``writable_int``)."""
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
    fast = orjson_module()
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
    fast = orjson_module()
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
