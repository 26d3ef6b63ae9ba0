"""The JSON every output of toolspan is written with (the CLI's, the server's, the exporters'): orjson when
installed (an optional extra), else the stdlib; ``TOOLSPAN_JSON=stdlib`` turns orjson off, for the readers'
parser too (``readers._json_parse``). Both backends write the same bytes for the same value.

Output is always strict JSON. A non-finite float is written as ``null`` by both backends (orjson cannot do
otherwise without a slow second pass). Only a value made in Python holds one: every reader gives a
non-finite number as its text (``"NaN"``, ``"Infinity"``, ``"-Infinity"``, as OTLP/JSON encodes non-finite
doubles), and so does the views' parser of JSON text inside attributes (a tool's arguments written with
``NaN``).

Documents are compact (no spaces after ``,`` and ``:``) unless indented. orjson writes a float as Python's
``repr`` does except below 1e-4 (``0.00001`` for ``1e-05``, ``2.5e-7`` for ``2.5e-07``): a document holding
such a float is written by the standard library (``_floats_differ`` finds them in orjson's bytes).

The writers are strict UTF-8 whatever they are given: a lone surrogate a caller's own span holds is written
as its JSON escape (``"\\ud800"``), an integer too long for decimal text as its hex text (``writable_int``).
"""

from __future__ import annotations

import functools
import json
import math
import re
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


def finite(value: Any, nonfinite: Callable[[float], Any] = nonfinite_text) -> Any:
    """``value`` with every non-finite float (nested in lists, tuples and dicts) as ``nonfinite(value)``
    (its text by default), and every integer too long for decimal text as its hex text
    (``writable_int``)."""
    if type(value) is float:
        return value if math.isfinite(value) else nonfinite(value)
    if type(value) is int:
        return writable_int(value)
    if isinstance(value, dict):
        return {k: finite(v, nonfinite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v, nonfinite) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else nonfinite(value)
    return value


def _null(_: float) -> None:
    return None


def _json_ready(value: Any) -> Any:
    """``value`` as both backends write it: non-finite floats as ``None``, over-long integers as hex."""
    return finite(value, _null)


# Where orjson's text of a float is not ``repr``'s: below 1e-4, ``0.0000...`` or an exponent of one digit.
_SMALL: Final = re.compile(rb"\.0000")
_EXPONENT: Final = re.compile(rb"e-[0-9](?![0-9])")
_DIFFERENT_FLOAT: Final = re.compile(rb"-?(?:0\.0000|[0-9]+(?:\.[0-9]+)?e-[0-9](?:[,\]}]|$))")
_NUMBER_BYTES: Final = frozenset(b"0123456789.-")
_LONGEST_FLOAT: Final = 32  # bytes of orjson's text of a float (``-1.2345678901234567e-308``), and more
_VALUE_STARTS: Final = frozenset(b",:[")
# Past this many places to look at, the standard library writes the document (a bound on the search).
_MAX_CANDIDATES: Final = 64


def _float_at(data: bytes, at: int) -> bool:
    """Whether the number around ``at`` (a mark found inside it) is a float orjson writes otherwise."""
    start, floor = at, max(0, at - _LONGEST_FLOAT)
    while start > floor and data[start - 1] in _NUMBER_BYTES:
        start -= 1
    return (start == 0 or data[start - 1] in _VALUE_STARTS) and _DIFFERENT_FLOAT.match(
        data, start
    ) is not None


def _floats_differ(data: bytes) -> bool:
    """Whether orjson's compact ``data`` holds a float whose text is not Python's ``repr`` of it (or more
    than ``_MAX_CANDIDATES`` places that look like one). A float starts after ``,``, ``:`` or ``[`` (or at
    the start); the same text inside a string (rare) answers ``True`` too, which only costs the standard
    library's slower, identical encoding."""
    seen = 0
    for mark in (_SMALL, _EXPONENT):
        for found in mark.finditer(data):
            seen += 1
            if seen > _MAX_CANDIDATES or _float_at(data, found.start()):
                return True
    return False


def _stdlib_document(value: Any, indent: int | None) -> bytes:
    separators = (",", ":") if indent is None else (",", ": ")
    try:
        text = json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, allow_nan=False)
    except ValueError:  # a non-finite float, an integer too long for decimal text
        ready = _json_ready(value)
        text = json.dumps(ready, ensure_ascii=False, indent=indent, separators=separators, allow_nan=False)
    return text.encode("utf-8", "backslashreplace")


def dumps_document(value: Any, indent: int | None = None) -> bytes:
    """One JSON document as strict UTF-8 JSON: compact, or indented by ``indent`` spaces; the same bytes
    with orjson as with the standard library (see the module's docstring)."""
    fast = orjson_module() if indent is None else None
    if fast is not None and _writes_alike(fast):
        try:
            data: bytes = fast.dumps(value, option=_options(fast))
        except TypeError:  # a lone surrogate, an integer beyond 64 bits, a non-string key, a subclass, ...
            pass
        else:
            if not _floats_differ(data):
                return data
    return _stdlib_document(value, indent)


# What the installed orjson is checked on once: floats either side of every change of form, every character
# the standard library escapes or leaves (ensure_ascii=False), nesting and the other scalars.
_PROBES: Final = (
    *(0.0, -0.0, 0.1, 1.5, 1e-4, 1e-5, 1.5e-5, 1e-6, 2.5e-7, 1e-10, 5e-324, 2.2250738585072014e-308),
    *(1e15, 999999999999999.9, 1e16, 1.2345678901234568e17, 1e21, 1e22, 1.5e300, 1.7976931348623157e308),
    *(-1e16, -2.5e-7, 12345.678, 1 / 3, 2**63 - 1, -(2**63), 2**64 - 1, True, False, None),
    "".join(map(chr, range(0x21))) + '"\\\x7f\u2028\u2029\u00e9\u20ac\U0001f600',
    {"a": [[], {}, [1]]},
)


@functools.cache
def _writes_alike(fast: ModuleType) -> bool:
    """Whether this orjson writes the probes as the standard library does, each float that differs found
    by ``_floats_differ`` (an orjson release that writes any otherwise is not used)."""
    for probe in _PROBES:
        try:
            data = fast.dumps([probe, {"k": probe}], option=_options(fast))
        except TypeError:
            return False
        if data != _stdlib_document([probe, {"k": probe}], None) and not _floats_differ(data):
            return False
    return True


def _options(fast: ModuleType) -> int:
    """orjson's options that leave to the standard library what it writes otherwise, or refuses: a
    subclass of a built-in type, a dataclass, a date or time."""
    return int(fast.OPT_PASSTHROUGH_SUBCLASS | fast.OPT_PASSTHROUGH_DATACLASS | fast.OPT_PASSTHROUGH_DATETIME)


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
                return plain(_json_ready(value))

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
        except ValueError:  # a non-finite float, an integer too long for decimal text
            return join(chunks(_json_ready(value), 0))

    return text


def dumps_function() -> Dumps:
    """Compact UTF-8 JSON of one value, the same bytes with either backend: the standard library writes
    what orjson refuses or writes otherwise."""
    text = _stdlib_text_dumps()
    fast = orjson_module()
    if fast is None:
        return lambda value: text(value).encode("utf-8", "backslashreplace")
    if not _writes_alike(fast):
        return lambda value: text(value).encode("utf-8", "backslashreplace")
    fast_dumps, options = fast.dumps, _options(fast)

    def dumps(value: Any) -> bytes:
        try:
            data: bytes = fast_dumps(value, option=options)
        except TypeError:  # an integer beyond 64 bits, a non-string key, ...
            return text(value).encode("utf-8", "backslashreplace")
        return text(value).encode("utf-8", "backslashreplace") if _floats_differ(data) else data

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
